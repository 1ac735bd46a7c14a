@testable import EmojiArtApp
import Clocks
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GalleryServer
import ImageCache
import Testing
import TestSupport

/// Issue 48, part 5: work budgets for the warm-up. Before, a feed edition had the warm-up decode
/// every verified piece's original, whatever its size, within a byte budget of what it made
/// (small variants of huge originals fit it). Now it reads each original's header first: one over
/// `warmUpMaxSourcePixels` is refused before any decode, and an edition decodes at most
/// `warmUpPixelBudget` source pixels (`--warm-up-megapixels`). A real gallery (the book's 360 x
/// 650 pieces), real cache, real libvips. And at most one warm-up starts per feed check interval:
/// an edition within it waits its turn, on a clock the test moves.
@Suite(.timeLimit(.minutes(3))) struct WarmUpBudgetTests {
    /// The book's pieces: 360 x 650 pixels each.
    static let piecePixels = 360 * 650

    /// The app's services over a gallery, with the warm-up's pixel limits set by `configure`.
    func services(
        _ galleryURL: URL, _ pipeline: ImagePipeline, configure: (inout AppConfiguration) -> Void
    ) throws -> (EmojiArtModel, AppServices) {
        var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
        configure(&configuration)
        let model = makeModel(galleryURL, pipeline)
        let (_, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: model, pipeline: pipeline)
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
        try await withGallery { galleryURL, pipeline in
            let (model, services) = try services(galleryURL, pipeline) { $0.warmUpPixelBudget = 3 * Self.piecePixels }
            let progress = await warmUp(model, services)
            let kinds = services.formats.count * VariantKind.densities.count
            #expect(progress.state == .stopped && progress.text.hasSuffix("budget reached"), "\(progress)")
            #expect(progress.pixels == 3 * Self.piecePixels && progress.pixelBudget == 3 * Self.piecePixels)
            #expect(progress.made == 3 * kinds && progress.bytes < progress.budget, "\(progress)")
            #expect(await pipeline.stats().scheduling.processing.started == 3 * kinds, "no other piece's variant was made")
        }
    }

    /// An original over the largest the warm-up decodes is refused from its header: no variant
    /// of it is made, nothing is decoded, and the warm-up says how many it refused.
    @Test func anOriginalOverTheLimitIsRefusedBeforeDecoding() async throws {
        try await withGallery { galleryURL, pipeline in
            let (model, services) = try services(galleryURL, pipeline) { $0.warmUpMaxSourcePixels = Self.piecePixels - 1 }
            let progress = await warmUp(model, services)
            #expect(progress.state == .done && progress.total > 0, "\(progress)")
            #expect(progress.refused == progress.total && progress.made == 0 && progress.pixels == 0, "\(progress)")
            #expect(await pipeline.stats().scheduling.processing.started == 0, "nothing decoded")
            let stats = try JSONSerialization.jsonObject(with: JSONEncoder().encode(progress)) as? [String: Any]
            #expect(stats?["refused"] as? Int == progress.total && stats?["pixelBudget"] as? Int == 64_000_000)
        }
    }

    /// The catalog page's background work is bounded as the warm-up's is: a page load prefetches
    /// the details variant only of originals within the largest the warm-up decodes, read from
    /// their headers (a hostile gallery's 49-megapixel art cost 9 CPU-seconds a first page load).
    @Test func aCatalogPageLoadPrefetchesNoDetailsOfAnOriginalOverTheLimit() async throws {
        try await withGallery { galleryURL, pipeline in
            for (limit, expected) in [(Self.piecePixels - 1, 0), (Self.piecePixels, 4)] {
                let (model, services) = try services(galleryURL, pipeline) { $0.warmUpMaxSourcePixels = limit }
                await model.loadAndVerify()
                let pieces = await model.entries.filter { $0.status == .verified }.compactMap(\.file.pieceNumber)
                let requests = await services.detailRequests(of: Array(Set(pieces)).sorted().prefix(4).map { $0 }, format: .png)
                #expect(requests.count == expected, "\(limit) pixels at most: \(requests.count) details prefetched")
                #expect(await pipeline.stats().scheduling.processing.started == 0, "a header was read by decoding")
            }
        }
    }

    /// A new edition within the interval of the last start waits (`deferred`), and starts, planned
    /// afresh, once the interval has passed on the warm-up's clock: an edition a second cannot
    /// have every instance decode its catalog a second.
    @Test func aNewEditionWithinTheIntervalWaitsItsTurn() async throws {
        let configuration = GalleryConfiguration(port: 0, signingKey: testGalleryKey, revisionInterval: .zero)
        let directory = TemporaryDirectory()
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let galleryURL = URL(string: "http://127.0.0.1:\(port)")!
            var loader = ImagePipeline.Configuration(diskDirectory: directory.url, synchronizesWrites: false)
            loader.fetcher = EmojiArtModel.galleryFetcher()
            let pipeline = ImagePipeline(configuration: loader)
            let (model, services) = try services(galleryURL, pipeline) { $0.feedCheckInterval = .seconds(30) }
            let clock = TestClock<Duration>()
            let running = Task { try await WarmUp(services: services, clock: clock).run() }
            defer { running.cancel() }
            await model.loadAndVerify()
            for await progress in services.warmUp.stream() where progress.runs >= 1 && progress.ended { break }

            var request = URLRequest(url: galleryURL.appendingPathComponent("gallery/test/revise"))
            request.httpMethod = "POST"
            _ = try await URLSession.shared.data(for: request)
            #expect(await model.refreshIfFeedChanged(), "a new edition")
            for await progress in services.warmUp.stream() where progress.state == .deferred || progress.runs >= 2 { break }
            #expect(services.warmUp.value.state == .deferred && services.warmUp.value.runs == 1, "\(services.warmUp.value)")

            await clock.advance(by: .seconds(31))
            var second = services.warmUp.value
            for await progress in services.warmUp.stream() where progress.runs >= 2 && progress.ended {
                second = progress
                break
            }
            #expect(second.state == .done && second.runs == 2 && second.made == second.total, "\(second)")
        }
    }
}
