import EmojiArtApp
import Foundation
import GalleryServer
import Hummingbird
import HummingbirdTesting
import ImageCache
import Testing
import TestSupport

/// How the app uses the pipeline's scheduling: the details variants prefetched at low priority
/// once the catalog is shown, landing on disk without counting as hits; the stages on /metrics.
@Suite(.timeLimit(.minutes(3))) struct AppSchedulingTests {
    /// The app's router against a live gallery, once verification has finished.
    func withVerifiedApp(_ body: @Sendable (any TestClientProtocol, ImagePipeline) async throws -> Void) async throws {
        try await withGallery { galleryURL, pipeline in
            let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
            let model = makeModel(galleryURL, pipeline)
            let router = try EmojiArtApp.buildRouter(configuration, model: model, pipeline: pipeline)
            await model.loadAndVerify()
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            try await app.test(.router) { client in try await body(client, pipeline) }
        }
    }

    @Test func showingTheCatalogPrefetchesEveryDetailsImageToDiskWithoutCountingHits() async throws {
        try await withVerifiedApp { client, pipeline in
            let before = await pipeline.stats()
            try await client.execute(uri: "/", method: .get) { #expect($0.status == .ok) }
            // 26 served pieces: 26 details variants made, in the background, then on disk.
            // Each disk write that ends is a change: the 26th is the last.
            for await _ in await pipeline.onSchedulingChange where await pipeline.stats().diskEntries == before.diskEntries + 26 {
                break
            }
            let after = await pipeline.stats()
            #expect(after.memoryHits == before.memoryHits && after.diskHits == before.diskHits, "prefetches are not hits")
            #expect(after.originFetches == before.originFetches, "made from the verified originals")
            #expect(after.scheduling.processing.started - before.scheduling.processing.started == 26)

            // Opening a details page now answers from disk: no processing.
            try await client.execute(uri: "/large/5", method: .get) { #expect($0.status == .ok) }
            let opened = await pipeline.stats()
            #expect(opened.diskHits == after.diskHits + 1)
            #expect(opened.scheduling.processing.started == after.scheduling.processing.started)

            // Loading the catalog again prefetches nothing again: no disk read, no processing.
            try await client.execute(uri: "/", method: .get) { #expect($0.status == .ok) }
            let again = await pipeline.stats().scheduling
            #expect(again.diskReads.started == opened.scheduling.diskReads.started)
            #expect(again.processing.started == opened.scheduling.processing.started)
        }
    }

    @Test func metricsShowEachStageOfTheScheduling() async throws {
        try await withVerifiedApp { client, pipeline in
            try await client.execute(uri: "/thumbs/5", method: .get) { #expect($0.status == .ok) }
            let text = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
            let lines = text.split(separator: "\n")
            func value(_ prefix: String) -> Double? {
                lines.first { $0.hasPrefix(prefix) }.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
            }
            // Verification fetched 29 originals; the thumbnail was one processing.
            #expect(value("emojiart_stage_started_total{stage=\"downloads\"}") == 29)
            #expect(value("emojiart_stage_started_total{stage=\"processing\"}") == 1)
            #expect((value("emojiart_stage_max_running{stage=\"downloads\"}") ?? 0) >= 1)
            #expect((value("emojiart_stage_max_running{stage=\"downloads\"}") ?? 99) <= 8)
            #expect(value("emojiart_stage_limit{stage=\"downloads\"}") == 8)
            #expect(value("emojiart_stage_queued{stage=\"processing\"}") == 0)
            #expect(value("emojiart_stage_refused_total{stage=\"processing\"}") == 0)
            #expect(value("emojiart_originals_waiting_bytes") == 0)
        }
    }
}
