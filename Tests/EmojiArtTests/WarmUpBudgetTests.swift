@testable import EmojiArtApp
import Foundation
import ImageCache
import Testing
import TestSupport

/// Issue 48, part 5: work budgets for the warm-up. Before, a feed edition had the warm-up decode
/// every verified piece's original, whatever its size, within a byte budget of what it made
/// (small variants of huge originals fit it). Now it reads each original's header first: one over
/// `warmUpMaxSourcePixels` is refused before any decode, and an edition decodes at most
/// `warmUpPixelBudget` source pixels (`--warm-up-megapixels`). A real gallery (the book's 360 x
/// 650 pieces), real cache, real libvips.
@Suite(.timeLimit(.minutes(3))) struct WarmUpBudgetTests {
    /// The book's pieces: 360 x 650 pixels each.
    static let piecePixels = 360 * 650

    /// The app's services over a gallery, with the warm-up's pixel limits set by `configure`.
    func services(
        _ galleryURL: URL, _ database: ImagePipeline, configure: (inout AppConfiguration) -> Void
    ) throws -> (EmojiArtModel, AppServices) {
        var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
        configure(&configuration)
        let model = makeModel(galleryURL, database)
        let (_, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: model, database: database)
        return (model, services)
    }

    /// Runs the warm-up over the verified feed until it ends: its progress then.
    func warmUp(_ model: EmojiArtModel, _ services: AppServices) async -> WarmUp.Progress {
        let running = Task { try await WarmUp(services: services).run() }
        defer { running.cancel() }
        await model.loadAndVerify()
        for await progress in services.warmUp.stream() where progress.runs >= 1 && progress.ended { return progress }
        return services.warmUp.value
    }

    /// With room for three originals' pixels, it decodes three pieces' and stops, however much of
    /// its byte budget is left.
    @Test func anEditionDecodesAtMostItsPixelBudget() async throws {
        try await withGallery { galleryURL, database in
            let (model, services) = try services(galleryURL, database) { $0.warmUpPixelBudget = 3 * Self.piecePixels }
            let progress = await warmUp(model, services)
            let kinds = services.formats.count * VariantKind.densities.count
            #expect(progress.state == .stopped && progress.text.hasSuffix("budget reached"), "\(progress)")
            #expect(progress.pixels == 3 * Self.piecePixels && progress.pixelBudget == 3 * Self.piecePixels)
            #expect(progress.made == 3 * kinds && progress.bytes < progress.budget, "\(progress)")
            #expect(await database.stats().scheduling.processing.started == 3 * kinds, "no other piece's variant was made")
        }
    }

    /// An original over the largest the warm-up decodes is refused from its header: no variant
    /// of it is made, nothing is decoded, and the warm-up says how many it refused.
    @Test func anOriginalOverTheLimitIsRefusedBeforeDecoding() async throws {
        try await withGallery { galleryURL, database in
            let (model, services) = try services(galleryURL, database) { $0.warmUpMaxSourcePixels = Self.piecePixels - 1 }
            let progress = await warmUp(model, services)
            #expect(progress.state == .done && progress.total > 0, "\(progress)")
            #expect(progress.refused == progress.total && progress.made == 0 && progress.pixels == 0, "\(progress)")
            #expect(await database.stats().scheduling.processing.started == 0, "nothing decoded")
            let stats = try JSONSerialization.jsonObject(with: JSONEncoder().encode(progress)) as? [String: Any]
            #expect(stats?["refused"] as? Int == progress.total && stats?["pixelBudget"] as? Int == 64_000_000)
        }
    }
}
