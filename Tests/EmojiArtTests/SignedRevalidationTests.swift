import AsyncHTTPClient
import EmojiArtApp
import Foundation
import GalleryServer
import Hummingbird
import HummingbirdTesting
import HTTPCaching
import ImageCache
import MessageSignatures
import NIOCore
import NIOHTTP1
import Testing
import TestSupport

/// The feed stays authentic after its first download: a 304 counts only when the gallery signed
/// it for the stored feed, an older signed feed cannot be replayed, and a catalog that could not
/// be re-authenticated says so on the page. Real galleries and a real tampering proxy.
@Suite(.timeLimit(.minutes(3))) struct SignedRevalidationTests {
    /// The cache key of the gallery's feed verified with the test key.
    static func feedKey(_ galleryURL: URL) -> String {
        galleryURL.absoluteString + "/gallery/images#verified-by=" + testGalleryKey.fingerprint
    }

    /// Catalog loads while a feed check is under way share it: eight at once send one request,
    /// not eight (attacker round 4: every load revalidated the feed, so eight page loads cost
    /// eight signature checks of a forged answer). The gallery's answer is held at the proxy
    /// until all eight are in.
    @Test func catalogLoadsAtOnceShareOneFeedCheck() async throws {
        let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!)
        try await proxy.inFrontOfGallery { proxyURL, pipeline in
            let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
            await model.loadAndVerify()
            #expect(model.phase.value == .ready)
            let held = Gate()
            proxy.attack(.holdFeed(held))
            let before = proxy.feedRequests
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 { group.addTask { await model.refreshIfFeedChanged() } }
                // Seven share the check the first one started, which waits at the proxy.
                for await shared in model.sharedFeedChecks.stream() where shared >= 7 { break }
                held.open()
                for await started in group { #expect(!started, "the feed did not change") }
            }
            #expect(proxy.feedRequests - before == 1)
            #expect(model.feedOrigin.value == .revalidated)
            // Once it is over, the next load checks again.
            #expect(await model.refreshIfFeedChanged() == false)
            #expect(proxy.feedRequests - before == 2)
        }
    }

    @Test func theGallerySignsItsFeed304AndTheAppAcceptsIt() async throws {
        try await withGallery { galleryURL, pipeline in
            let first = try await HTTPClient.shared.execute(HTTPClientRequest(url: galleryURL.absoluteString + "/gallery/images"), timeout: .seconds(30))
            let etag = try #require(first.headers.first(name: "etag"))
            var conditional = HTTPClientRequest(url: galleryURL.absoluteString + "/gallery/images")
            conditional.headers.add(name: "If-None-Match", value: etag)
            conditional.headers.add(name: "EmojiArt-Feed-Nonce", value: FeedNonce.make())
            let notModified = try await HTTPClient.shared.execute(conditional, timeout: .seconds(30))
            #expect(notModified.status == .notModified)
            #expect(notModified.headers.first(name: "signature-input")?.hasPrefix(#"feed=("@status" "etag" "emojiart-gallery-origin" "emojiart-feed-nonce";req);created="#) == true)
            #expect(notModified.headers.first(name: "signature") != nil)

            let model = makeModel(galleryURL, pipeline)
            try await model.loadImages()
            #expect(model.feedOrigin.value == .downloaded)
            try await model.loadImages()
            #expect(model.feedOrigin.value == .revalidated)
            #expect(model.signatureFailures.value.isEmpty && model.feedRefusal.value == nil)
        }
    }

    /// What answers the revalidation (a forged 304, or a forged 200), and the reason it is
    /// refused for.
    @Test(arguments: [
        ("unsigned", "missing_signature"),
        ("signed by another key", "unknown_key"),
        ("signed by the gallery's key for another ETag", "etag_mismatch"),
        ("a 200 with a changed price instead", "digest_mismatch"),
    ])
    func aForgedRevalidationIsRefusedAndThePageSaysTheCatalogIsNotReauthenticated(attack: String, reason: String) async throws {
        let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!)
        try await withGallery { galleryURL, pipeline in
            proxy.route(to: galleryURL)
            try await proxy.run { proxyURL in
                let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
                await model.loadAndVerify()
                #expect(model.phase.value == .ready && model.feedOrigin.value == .downloaded)
                let storedBefore = try #require(await pipeline.storedImage(forKey: Self.feedKey(proxyURL)))

                switch attack {
                case "unsigned": proxy.attack(.notModifiedUnsigned)
                case "signed by another key": proxy.attack(.notModifiedSigned(by: SigningKey()))
                case "a 200 with a changed price instead": proxy.attack(.changePrice)
                default: proxy.attack(.notModifiedSigned(by: testGalleryKey, etag: "\"another-edition\""))
                }
                let configuration = AppConfiguration(port: 0, galleryURL: proxyURL, trust: testGalleryTrust)
                let router = try EmojiArtApp.buildRouter(configuration, model: model, pipeline: pipeline)
                try await Application(router: router).test(.router) { client in
                    // Loading the catalog revalidates the feed: refused, asked again, refused.
                    try await client.execute(uri: "/", method: .get) { response in
                        let html = String(buffer: response.body)
                        #expect(response.status == .ok)
                        #expect(html.contains("id=\"feed-notice\"") && html.contains("could not be re-authenticated"), "\(attack)")
                        #expect(html.contains("it was last authenticated at "))
                        #expect(html.contains("Feed not re-authenticated now; last authenticated with") && !html.contains("Feed authenticated with"), "the footer does not claim it")
                        #expect(html.components(separatedBy: "<span>failed verification</span>").count == 1)
                        #expect(html.contains("src=\"/thumbs/4"), "the stored catalog is still shown")
                    }
                    let metrics = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
                    #expect(metrics.contains(#"emojiart_feed_signature_failures_total{reason="\#(reason)"} 1"#), "\(metrics)")
                }
                guard case let .notReauthenticated(failure, lastAuthenticated)? = model.feedOrigin.value else {
                    Issue.record("not marked: \(String(describing: model.feedOrigin.value))")
                    return
                }
                #expect(failure.reason == reason && lastAuthenticated == storedBefore.cacheHeaders?.responseTime)
                // The refused 304's fields overwrote nothing.
                let storedAfter = try #require(await pipeline.storedImage(forKey: Self.feedKey(proxyURL)))
                #expect(storedAfter.cacheHeaders == storedBefore.cacheHeaders && storedAfter.data == storedBefore.data)

                // The gallery signs again: the next load confirms the catalog and the notice goes.
                proxy.attack(.none)
                #expect(await model.refreshIfFeedChanged() == false)
                #expect(model.feedOrigin.value == .revalidated && model.feedRefusal.value == nil)
            }
        }
    }

    @Test func anOlderGallerysUnsigned304IsRefusedAndItsSigned200Taken() async throws {
        let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!, attack: .unsignedNotModifiedThrough)
        try await proxy.inFrontOfGallery { proxyURL, pipeline in
            let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
            try await model.loadImages()
            try await model.loadImages()
            // The 304 (its signature dropped) was refused; the second, plain request was
            // answered with the signed feed.
            #expect(model.feedOrigin.value == .downloaded)
            #expect(model.signatureFailures.value == ["missing_signature": 1])
            #expect(model.feedRefusal.value == nil)
        }
    }

    @Test func aRecordedOlderSigned200IsRefusedAsReplayedEvenAfterTheCacheIsCleared() async throws {
        let clock = TestWallClock(Date())
        let trust = testGalleryTrust
        let directory = TemporaryDirectory()
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
        let gallery = GalleryConfiguration(port: 0, signingKey: testGalleryKey, now: clock.now)
        try await withLiveServer({ try await Gallery.buildApplication(gallery, onServerRunning: $0) }) { port in
            let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:\(port)")!)
            try await proxy.run { proxyURL in
                func model() -> EmojiArtModel {
                    EmojiArtModel(galleryURL: proxyURL, pipeline: pipeline, trust: trust, now: clock.now, galleryOrigin: proxy.galleryOrigin)
                }
                // Recorded by the proxy at T; ten minutes later, a newer signature is accepted.
                try await model().loadImages()
                clock.advance(by: 600)
                await pipeline.clear()
                await pipeline.clearMemory()
                try await model().loadImages()

                // The recording, still within its hour, is replayed: a rollback, refused. It was
                // signed for another request (issue 40: before, only its date, older than the
                // newest accepted, gave it away; within 60 s of that it passed).
                proxy.attack(.replayFirstFeed)
                let withStored = model()
                try await withStored.loadImages()
                guard case .notReauthenticated(.notForThisRequest, _)? = withStored.feedOrigin.value else {
                    Issue.record("not refused as replayed: \(String(describing: withStored.feedOrigin.value))")
                    return
                }
                #expect(withStored.signatureFailures.value == ["replayed": 1])
                // Clearing the cache does not reset what was accepted: the trust store keeps it.
                await pipeline.clear()
                await pipeline.clearMemory()
                let cleared = model()
                let error = await #expect(throws: EmojiArtModel.Error.self) { try await cleared.loadImages() }
                guard case let .unauthenticatedFeed(_, failure)? = error else {
                    Issue.record("expected a refusal, got \(String(describing: error))")
                    return
                }
                #expect(failure.reason == "replayed" && failure.description.contains("replayed"))
            }
        }
    }

    @Test func aSignatureLivingLongerThanADayIsRefused() async throws {
        let gallery = GalleryConfiguration(port: 0, signingKey: testGalleryKey, signatureLifetime: .seconds(2 * 86_400))
        try await withLiveServer({ try await Gallery.buildApplication(gallery, onServerRunning: $0) }) { port in
            let directory = TemporaryDirectory()
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            let model = makeModel(URL(string: "http://127.0.0.1:\(port)")!, pipeline)
            let error = await #expect(throws: EmojiArtModel.Error.self) { try await model.loadImages() }
            guard case let .unauthenticatedFeed(_, .lifetimeTooLong(seconds, maximum))? = error else {
                Issue.record("expected lifetimeTooLong, got \(String(describing: error))")
                return
            }
            #expect(seconds == 172_800 && maximum == 86_400)
        }
    }

    @Test func aProxysOwnSignatureAddedFirstDoesNotFailTheGenuineFeed() async throws {
        let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!, attack: .addOwnSignatureFirst(SigningKey()))
        try await proxy.inFrontOfGallery { proxyURL, pipeline in
            let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
            #expect(try await model.loadImages().count == 87)
            try await model.loadImages()
            #expect(model.feedOrigin.value == .revalidated, "its 304, with the proxy's signature first, too")
            #expect(model.signatureFailures.value.isEmpty)
        }
    }

    @Test func syncSaysPlainlyAndExitsNonZeroWhenTheCatalogCannotBeReauthenticated() async throws {
        let cache = TemporaryDirectory()
        let cli = CommandLineTests()
        try await withGallery { galleryURL, _ in
            let proxy = TamperingProxy(upstream: galleryURL)
            try await proxy.run { proxyURL in
                let arguments = [
                    "sync", "--gallery", proxyURL.absoluteString, "--gallery-key=\(testGalleryKey.fingerprint)",
                    "--gallery-origin", proxy.galleryOrigin, "--cache-dir", cache.url.path,
                ]
                let first = try await cli.run(arguments)
                #expect(first.status == 0, "\(first.output)")
                let again = try await cli.run(arguments)
                #expect(again.status == 0 && again.output.contains("the feed is unchanged (a signed 304)"), "\(again.output)")

                proxy.attack(.notModifiedUnsigned)
                let frozen = try await cli.run(arguments)
                #expect(frozen.status == 1, "\(frozen.output)")
                #expect(frozen.output.contains("The catalog could not be re-authenticated"), "\(frozen.output)")
                #expect(frozen.output.contains("it was last authenticated at "))
                #expect(!frozen.output.contains("the feed is unchanged"))
            }
        }
    }
}
