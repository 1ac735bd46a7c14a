import EmojiArtApp
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GalleryServer
import Hummingbird
import HummingbirdTesting
import ImageCache
import MessageSignatures
import Testing
import TestSupport
import GalleryFeed

/// The stored feed is used only as the bytes this machine authenticated: someone who can write
/// the cache directory (a restored or shared cache) and re-seals an entry with another body gets
/// it refused, removed and, online, replaced by the gallery's signed feed. A real gallery on
/// 127.0.0.1:0, a real cache directory and trust file; each "start" is a new pipeline and model
/// over them, as a new process would be.
@Suite(.timeLimit(.minutes(3))) struct StoredFeedTrustTests {
    let cache = TemporaryDirectory()
    /// One machine's trust file, shared by every start of the app in a test.
    let trust = testGalleryTrust

    /// A new start of the app over the test's cache and trust file.
    func start(_ galleryURL: URL, offline: Bool = false) -> (EmojiArtModel, ImagePipeline) {
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false))
        return (EmojiArtModel(galleryURL: galleryURL, pipeline: pipeline, trust: trust, offline: offline), pipeline)
    }

    /// Re-writes the stored feed as a valid entry (sealed anew, the same headers and `ETag`) whose
    /// first price is 1,000 more: what someone with write access to the cache directory can do.
    /// - Returns: the forged price.
    @discardableResult
    static func forgeStoredFeed(of galleryURL: URL, in directory: URL) async throws -> Double {
        let key = SignedRevalidationTests.feedKey(galleryURL)
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory, synchronizesWrites: false))
        let found = await pipeline.storedImage(forKey: key)
        let genuine = try #require(found)
        var feed = try JSONDecoder().decode([ImageFile].self, from: Data(genuine.data))
        feed[0].price += 1000
        var forged = genuine
        forged.data = Array(try JSONEncoder().encode(feed))
        await pipeline.store(image: forged, forKey: key)
        return feed[0].price
    }

    func withGallery<T: Sendable>(_ body: (URL) async throws -> T) async throws -> T {
        try await withLiveServer({
            try await Gallery.buildApplication(.init(port: 0, signingKey: testGalleryKey), onServerRunning: $0)
        }) { port in
            try await body(URL(string: "http://127.0.0.1:\(port)")!)
        }
    }

    @Test func anOlderAcceptedFeedStoredUnderTheCurrentETagIsNotConfirmedByTheSigned304() async throws {
        try await withLiveServer({
            try await Gallery.buildApplication(.init(port: 0, signingKey: testGalleryKey, revisionInterval: .zero), onServerRunning: $0)
        }) { port in
            let galleryURL = URL(string: "http://127.0.0.1:\(port)")!
            let key = SignedRevalidationTests.feedKey(galleryURL)
            // Two editions, both accepted by this machine.
            let (first, firstDatabase) = start(galleryURL)
            _ = try await first.loadImages()
            let old = try #require(await firstDatabase.storedImage(forKey: key))
            var request = URLRequest(url: galleryURL.appendingPathComponent("gallery/test/revise"))
            request.httpMethod = "POST"
            _ = try await URLSession.shared.data(for: request)
            let (second, secondDatabase) = start(galleryURL)
            let current = try await second.loadImages()
            let stored = try #require(await secondDatabase.storedImage(forKey: key))
            #expect(stored.data != old.data, "the revision changed the feed")

            // Someone who can write the cache puts the old edition's bytes under the current
            // ETag: a conditional request on it would get the gallery's signed 304.
            var planted = stored
            planted.data = old.data
            await secondDatabase.store(image: planted, forKey: key)

            let (third, _) = start(galleryURL)
            #expect(try await third.loadImages() == current, "the current edition, not the old one")
            #expect(third.feedOrigin.value == .downloaded, "downloaded, not confirmed by a 304")
            #expect(third.signatureFailures.value == ["stored_feed_unknown": 1])
        }
    }

    @Test func theGenuineStoredFeedStillServesAnOfflineStart() async throws {
        try await withGallery { galleryURL in
            let genuine = try await start(galleryURL).0.loadImages()
            let (offline, _) = start(galleryURL, offline: true)
            #expect(try await offline.loadImages() == genuine)
            #expect(offline.feedOrigin.value == .offline)
            #expect(offline.signatureFailures.value.isEmpty && offline.feedRefusal.value == nil)
        }
    }

    @Test func aForgedStoredFeedIsRefusedOfflineAndRemoved() async throws {
        try await withGallery { galleryURL in
            _ = try await start(galleryURL).0.loadImages()
            try await Self.forgeStoredFeed(of: galleryURL, in: cache.url)

            let (offline, pipeline) = start(galleryURL, offline: true)
            let error = await #expect(throws: EmojiArtModel.Error.self) { try await offline.loadImages() }
            guard case let .unauthenticatedFeed(_, failure)? = error else {
                Issue.record("expected the stored feed refused, got \(String(describing: error))")
                return
            }
            #expect(failure == .storedFeedUnknown(gallery: galleryURL.absoluteString))
            let text = "\(error.map { "\($0)" } ?? "")"
            #expect(text.contains("the stored catalog of \(galleryURL.absoluteString) does not match any feed this machine authenticated: it was changed on disk; run once with the gallery reachable"), "\(text)")
            #expect(offline.signatureFailures.value == ["stored_feed_unknown": 1])
            #expect(await offline.imageFeed.isEmpty)
            #expect(await pipeline.storedImage(forKey: SignedRevalidationTests.feedKey(galleryURL)) == nil, "removed from the cache")
        }
    }

    @Test func withTheGalleryUpAForgedStoredFeedIsReplacedByTheSignedFeedNotRevalidated() async throws {
        try await withGallery { galleryURL in
            let genuine = try await start(galleryURL).0.loadImages()
            let forgedPrice = try await Self.forgeStoredFeed(of: galleryURL, in: cache.url)

            // The forged entry keeps the genuine ETag: sent as `If-None-Match`, the gallery would
            // answer with a signed 304 and the forged prices would be shown as confirmed.
            let (model, pipeline) = start(galleryURL)
            let shown = try await model.loadImages()
            #expect(shown == genuine && shown[0].price != forgedPrice)
            #expect(model.feedOrigin.value == .downloaded)
            #expect(model.signatureFailures.value == ["stored_feed_unknown": 1])
            #expect(model.feedRefusal.value == nil, "the signed feed is the latest word")
            let router = try EmojiArtApp.buildRouter(AppConfiguration(port: 0, galleryURL: galleryURL, trust: trust), model: model, pipeline: pipeline)
            try await Application(router: router).test(.router) { client in
                let metrics = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
                #expect(metrics.contains(#"emojiart_feed_signature_failures_total{reason="stored_feed_unknown"} 1"#), "\(metrics)")
            }
            let found = await pipeline.storedImage(forKey: SignedRevalidationTests.feedKey(galleryURL))
            let stored = try #require(found)
            #expect(try JSONDecoder().decode([ImageFile].self, from: Data(stored.data)) == genuine)

            // The next start revalidates the genuine copy as usual.
            let (next, _) = start(galleryURL)
            #expect(try await next.loadImages() == genuine)
            #expect(next.feedOrigin.value == .revalidated && next.signatureFailures.value.isEmpty)
        }
    }

    @Test func aFeedStoredByAnOlderBuildIsFetchedAgainOnceNotTrusted() async throws {
        try await withGallery { galleryURL in
            _ = try await start(galleryURL).0.loadImages()
            // An older build recorded the newest signature only (or the accepted feeds by key
            // alone, before issue 40): the trust file without this build's record by origin.
            let file = trust.store.file
            var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
            #expect(object.removeValue(forKey: "feeds") != nil, "this build records accepted feeds by origin and key")
            try JSONSerialization.data(withJSONObject: object).write(to: file)

            let (model, _) = start(galleryURL)
            _ = try await model.loadImages()
            #expect(model.feedOrigin.value == .downloaded)
            #expect(model.signatureFailures.value == ["stored_feed_unknown": 1])
            // Once only: the feed downloaded now is recorded, and the next start revalidates it.
            let (next, _) = start(galleryURL)
            _ = try await next.loadImages()
            #expect(next.feedOrigin.value == .revalidated && next.signatureFailures.value.isEmpty)
        }
    }

    @Test func syncRefusesAForgedStoredFeedOfflineAndWithTheGalleryDownSayingWhatToDo() async throws {
        let cli = CommandLineTests()
        let key = SigningKey()
        let cache = TemporaryDirectory()
        let port = try await withLiveServer({
            try await Gallery.buildApplication(.init(port: 0, signingKey: key), onServerRunning: $0)
        }) { port in
            let online = try await cli.run(["sync", "--gallery", "http://127.0.0.1:\(port)", "--cache-dir", cache.url.path])
            #expect(online.status == 0, "\(online.output)")
            return port
        }
        let gallery = "http://127.0.0.1:\(port)"
        let feedKey = gallery + "/gallery/images#verified-by=" + key.fingerprint
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false))
        let found = await pipeline.storedImage(forKey: feedKey)
        let genuine = try #require(found)
        var feed = try JSONDecoder().decode([ImageFile].self, from: Data(genuine.data))
        feed[0].price += 1000
        var forged = genuine
        forged.data = Array(try JSONEncoder().encode(feed))
        let message = "the stored catalog of \(gallery) does not match any feed this machine authenticated: it was changed on disk; run once with the gallery reachable"

        await pipeline.store(image: forged, forKey: feedKey)
        let offline = try await cli.run(["sync", "--offline", "--gallery", gallery, "--cache-dir", cache.url.path])
        #expect(offline.status == 1, "\(offline.output)")
        #expect(offline.output.contains(message), "\(offline.output)")
        await pipeline.clearMemory()
        #expect(await pipeline.storedImage(forKey: feedKey) == nil, "removed from the cache")

        // The gallery stopped: nothing else to show, the same words.
        await pipeline.store(image: forged, forKey: feedKey)
        let down = try await cli.run(["sync", "--gallery", gallery, "--cache-dir", cache.url.path])
        #expect(down.status == 1, "\(down.output)")
        #expect(down.output.contains(message), "\(down.output)")
    }
}
