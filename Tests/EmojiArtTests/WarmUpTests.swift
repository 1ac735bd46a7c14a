@testable import EmojiArtApp
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GalleryFeed
import GalleryServer
import ImageCache
import Testing
import TestSupport

/// The warm-up against a real gallery, a real cache directory and real libvips: once the feed is
/// authenticated and verified, every verified piece's thumbnail in every offered format at 1x and
/// 2x is made ahead, into memory, within its budget, and a new feed edition starts again.
@Suite(.timeLimit(.minutes(3))) struct WarmUpTests {
    /// The app's services over a gallery, with a warm-up `budget`.
    func services(_ galleryURL: URL, _ pipeline: ImagePipeline, budget: Int = 32 << 20) throws -> (EmojiArtModel, AppServices) {
        var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
        configuration.warmUpBudget = budget
        // Editions back to back start at once (their spacing: WarmUpBudgetTests).
        configuration.feedCheckInterval = .zero
        let model = makeModel(galleryURL, pipeline)
        let (_, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: model, pipeline: pipeline)
        return (model, services)
    }

    /// The warm-up's progress once it ends.
    func ended(_ services: AppServices, runs: Int = 1) async -> WarmUp.Progress {
        for await progress in services.warmUp.stream() where progress.runs >= runs && progress.ended { return progress }
        return services.warmUp.value
    }

    @Test func aReadyFeedsThumbnailsAreMadeInEveryFormatAtBothDensitiesBeforeAnyoneAsks() async throws {
        try await withGallery { galleryURL, pipeline in
            let (model, services) = try services(galleryURL, pipeline)
            #expect(services.warmUp.value.state == .idle)
            let running = Task { try await WarmUp(services: services).run() }
            defer { running.cancel() }
            await model.loadAndVerify()
            let progress = await ended(services)
            let kinds = services.formats.count * VariantKind.densities.count
            let verified = Set(await model.entries.filter { $0.status == .verified }.compactMap(\.file.pieceNumber))
            #expect(verified.count == 26)
            #expect(progress.state == .done && progress.failed == 0)
            #expect(progress.total == verified.count * kinds && progress.made == progress.total, "\(progress)")
            #expect(progress.seconds != nil && progress.text == "\(progress.total) of \(progress.total), done")
            // Every one is in memory, as the fast lane looks for it: a first request is a hit.
            var bytes = 0
            for piece in verified {
                for density in VariantKind.densities {
                    for format in services.formats {
                        let kind = VariantKind(route: .thumbs, density: density, format: format)
                        let request = try #require(services.variant(piece: piece, kind: kind)).request
                        let image = try #require(pipeline.answerFromMemory(request), "\(piece) \(kind)")
                        #expect(image.contentType == "image/\(format.rawValue)")
                        bytes += image.byteCount
                    }
                }
            }
            #expect(progress.bytes == bytes)
            // Background work: never more than its share of the processors, so a request somebody
            // waits for always found one free; and nothing was asked of the gallery again.
            let processing = await pipeline.stats().scheduling.processing
            #expect(processing.maxBackgroundRunning <= processing.backgroundLimit && processing.backgroundLimit < processing.limit || processing.limit == 1)
            #expect(await services.stats().warmUp == progress)
        }
    }

    @Test func itStopsAtItsBudget() async throws {
        try await withGallery { galleryURL, pipeline in
            let (model, services) = try services(galleryURL, pipeline, budget: 1)
            let running = Task { try await WarmUp(services: services).run() }
            defer { running.cancel() }
            await model.loadAndVerify()
            let progress = await ended(services)
            // One batch, then the budget is spent.
            #expect(progress.state == .stopped, "\(progress)")
            #expect(progress.made == WarmUp.batchPieces * services.formats.count * 2 && progress.made < progress.total)
            #expect(progress.text.hasSuffix("budget reached"))
        }
    }

    @Test func aBudgetOfZeroWarmsNothing() async throws {
        try await withGallery { galleryURL, pipeline in
            let (model, services) = try services(galleryURL, pipeline, budget: 0)
            try await WarmUp(services: services).run()  // returns at once
            await model.loadAndVerify()
            #expect(services.warmUp.value.state == .off && services.warmUp.value.runs == 0)
            #expect(await pipeline.stats().scheduling.processing.started == 0, "verification makes no variant")
        }
    }

    /// Cancelled (a new feed edition is coming), it withdraws what it has not started and says so.
    @Test func cancelledItWithdrawsItsRequests() async throws {
        try await withGallery { galleryURL, pipeline in
            let (model, services) = try services(galleryURL, pipeline)
            await model.loadAndVerify()
            let warmUp = WarmUp(services: services)
            let plan = await warmUp.plan()
            let warming = Task { await warmUp.warm(plan) }
            // The first batch made: cancel while the next runs.
            for await progress in services.warmUp.stream() where progress.made > 0 { break }
            warming.cancel()
            await warming.value
            let progress = services.warmUp.value
            #expect(progress.state == .cancelled && progress.made < progress.total, "\(progress)")
            #expect(progress.text.hasSuffix("cancelled"))
            // What it had not started is not made: the stages settle short of the plan.
            for await stats in await pipeline.onSchedulingChange where stats.processing.running == 0 && stats.processing.queued == 0 { break }
            #expect(await pipeline.stats().scheduling.processing.started < progress.total)
        }
    }

    /// A revision of the gallery's art: the new feed edition is warmed again, with the revised
    /// pieces' new art.
    @Test func aNewFeedEditionIsWarmedAgain() async throws {
        let configuration = GalleryConfiguration(port: 0, signingKey: testGalleryKey, revisionInterval: .zero)
        let directory = TemporaryDirectory()
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let galleryURL = URL(string: "http://127.0.0.1:\(port)")!
            var loader = ImagePipeline.Configuration(diskDirectory: directory.url, synchronizesWrites: false)
            loader.fetcher = EmojiArtModel.galleryFetcher()
            let pipeline = ImagePipeline(configuration: loader)
            let (model, services) = try services(galleryURL, pipeline)
            let running = Task { try await WarmUp(services: services).run() }
            defer { running.cancel() }
            await model.loadAndVerify()
            #expect(await ended(services).state == .done)

            var request = URLRequest(url: galleryURL.appendingPathComponent("gallery/test/revise"))
            request.httpMethod = "POST"
            let (answer, _) = try await URLSession.shared.data(for: request)
            struct Revision: Decodable { var pieces: [Int] }
            let revised = try JSONDecoder().decode(Revision.self, from: answer).pieces
            #expect(await model.refreshIfFeedChanged())
            let second = await ended(services, runs: 2)
            #expect(second.state == .done && second.made == second.total && second.runs == 2, "\(second)")
            for piece in revised {
                let file = try #require(model.feedByPiece.value[piece])
                let kind = VariantKind(route: .thumbs, density: 2, format: services.formats[0])
                let variant = try #require(services.variant(piece: piece, kind: kind))
                let image = try #require(pipeline.answerFromMemory(variant.request))
                #expect(image.originalSHA256.map { "sha256:" + $0 } == file.checksum, "piece \(piece): the new art's")
            }
        }
    }

    /// `sync --variants` fills the same variants as the warm-up, on disk for the app to come;
    /// plain `sync` makes only its PNG thumbnails.
    @Test func syncWithVariantsFillsTheSameVariantsAndPlainSyncDoesNot() async throws {
        try await withGallery { galleryURL, pipeline in
            let (model, services) = try services(galleryURL, pipeline, budget: 0)
            let plain = try await Sync(model: model).run()
            #expect(plain.variants == nil && !TerminalText.summary(plain).contains("variants"))
            var requests: [ImageRequest] = []
            for piece in Set(await model.entries.filter { $0.status == .verified }.compactMap(\.file.pieceNumber)) {
                for density in VariantKind.densities {
                    for format in services.formats {
                        let variant = try #require(services.variant(piece: piece, kind: VariantKind(route: .thumbs, density: density, format: format)))
                        requests.append(variant.request)
                    }
                }
            }
            let disk = try #require(pipeline.disk)
            #expect(requests.filter { disk.contains(key: $0.cacheKey) }.count == 26, "plain sync: the 1x PNGs only")
            let report = try await Sync(model: model, variants: true).run()
            #expect(report.variants == requests.count && requests.count == 26 * services.formats.count * 2)
            #expect(report.variantsPlanned == requests.count && report.succeeded)
            #expect(TerminalText.summary(report).contains("variants"))
            #expect(requests.allSatisfy { disk.contains(key: $0.cacheKey) }, "every variant on disk (the sync flushes)")
        }
    }
}
