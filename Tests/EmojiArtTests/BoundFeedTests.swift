import EmojiArtApp
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GalleryFeed
import GalleryServer
import HTTPCaching
import Hummingbird
import ImageCache
import MessageSignatures
import Testing
import TestSupport

/// Issue 40, findings 1 and 2: every feed answer is bound to the request that asked for it (the
/// app's nonce, signed as `"emojiart-feed-nonce";req`) and to the gallery that gave it (its
/// signed origin), so neither a recorded answer nor another gallery's passes. Real galleries on
/// 127.0.0.1:0 and a real proxy between, as the attacker ran them.
@Suite(.timeLimit(.minutes(3))) struct BoundFeedTests {
    let cache = TemporaryDirectory()

    /// A gallery with revisions on request, signing with the test key, `seed`'s feed.
    func withGallery<T: Sendable>(seed: UInt64 = GalleryConfiguration.defaultSeed, _ body: (URL) async throws -> T) async throws -> T {
        let configuration = GalleryConfiguration(port: 0, seed: seed, signingKey: testGalleryKey, revisionInterval: .zero)
        return try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            try await body(URL(string: "http://127.0.0.1:\(port)")!)
        }
    }

    func pipeline() -> ImagePipeline {
        ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false))
    }

    static func revise(_ galleryURL: URL) async throws {
        var request = URLRequest(url: galleryURL.appendingPathComponent("gallery/test/revise"))
        request.httpMethod = "POST"
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
    }

    /// Finding 1: a proxy recorded the gallery's signed 304 and signed 200; after a revision it
    /// answers the conditional request with the 304 and the unconditional one with the 200.
    /// Before, the 304 was taken ("the feed is unchanged (a signed 304)") and the old prices and
    /// checksums stayed authenticated. Now both are refused as replayed, in words, the stored
    /// catalog is marked not re-authenticated, and the gallery's own answer is taken next.
    @Test func aRecordedSigned304And200ReplayedAfterARevisionAreRefused() async throws {
        try await withGallery { galleryURL in
            let proxy = TamperingProxy(upstream: galleryURL)
            try await proxy.run { proxyURL in
                let model = makeModel(proxyURL, pipeline(), galleryOrigin: proxy.galleryOrigin)
                let before = try await model.loadImages()
                try await model.loadImages()
                #expect(model.feedOrigin.value == .revalidated)
                #expect(proxy.recorded.feeds == 1 && proxy.recorded.notModified == 1, "a signed 200 and a signed 304 recorded")

                try await Self.revise(galleryURL)
                proxy.attack(.replayRecorded)
                let report = try await Sync(model: model).run()
                #expect(await model.imageFeed == before, "the stored catalog, as it was")
                guard case let .notReauthenticated(failure, _)? = model.feedOrigin.value else {
                    Issue.record("the replay was taken: \(String(describing: model.feedOrigin.value))")
                    return
                }
                #expect(failure.reason == "replayed", "\(failure)")
                #expect("\(failure)".contains("signed for another request") && "\(failure)".contains("a recorded answer was replayed"))
                #expect(model.signatureFailures.value == ["replayed": 2], "the 304, then the 200 asked for without validators")
                let summary = TerminalText.summary(report)
                #expect(summary.contains("could not be re-authenticated") && !summary.contains("the feed is unchanged"), "\(summary)")

                // The gallery's own answer is taken again: the revision.
                proxy.attack(.none)
                let after = try await model.loadImages()
                #expect(after != before && model.feedOrigin.value == .downloaded)
            }
        }
    }

    /// Finding 2: two galleries, `--seed 1` and `--seed 2`, signing with one key, and a proxy for
    /// B that hands out A's feed. Before, the app took A's prices as B's ("Feed authenticated").
    /// Now the signed origin names A: refused as `wrong_gallery`, at first contact (no key is
    /// trusted from it) and later (B's catalog stays, marked not re-authenticated).
    @Test func aFeedOfAnotherGallerySignedWithTheSameKeyIsRefused() async throws {
        try await withGallery(seed: 1) { galleryA in
            try await withGallery(seed: 2) { galleryB in
                let proxy = TamperingProxy(upstream: galleryA)
                try await proxy.run { proxyURL in
                    let store = testTrustStore()
                    let model = EmojiArtModel(
                        galleryURL: proxyURL, pipeline: pipeline(), trust: .firstUse(store), galleryOrigin: galleryB.originKey
                    )
                    let error = await #expect(throws: EmojiArtModel.Error.self) { try await model.loadImages() }
                    #expect(error == .unauthenticatedFeed(
                        url: proxyURL.absoluteString + "/gallery/images",
                        failure: .wrongGallery(expected: galleryB.originKey, offered: galleryA.originKey)
                    ))
                    #expect(model.signatureFailures.value == ["wrong_gallery": 1])
                    #expect(try store.key(for: proxyURL) == nil, "no key is trusted from another gallery's feed")

                    proxy.route(to: galleryB)
                    let feedB = try await model.loadImages()
                    proxy.route(to: galleryA)
                    let shown = try await model.loadImages()
                    #expect(shown == feedB, "B's catalog stays")
                    guard case let .notReauthenticated(failure, _)? = model.feedOrigin.value else {
                        Issue.record("A's feed was taken: \(String(describing: model.feedOrigin.value))")
                        return
                    }
                    #expect(failure == .wrongGallery(expected: galleryB.originKey, offered: galleryA.originKey))
                    let (data, _) = try await URLSession.shared.data(from: galleryA.appendingPathComponent("gallery/images"))
                    let feedA = try JSONDecoder().decode([ImageFile].self, from: data)
                    #expect(feedA.map(\.price) != feedB.map(\.price), "the two galleries' prices differ")
                }

                // `sync` as the attacker ran it, the key pinned: not 87/87 verified, but refused.
                let cli = CommandLineTests()
                let fresh = TemporaryDirectory()
                let swapping = TamperingProxy(upstream: galleryA)
                try await swapping.run { proxyURL in
                    let outcome = try await cli.run([
                        "sync", "--gallery", proxyURL.absoluteString, "--gallery-origin", galleryB.absoluteString,
                        "--gallery-key=\(testGalleryKey.fingerprint)", "--cache-dir", fresh.url.path,
                    ])
                    #expect(outcome.status != 0, "\(outcome.output)")
                    #expect(outcome.output.contains("the feed is signed for the gallery at \(galleryA.originKey), not \(galleryB.originKey)"), "\(outcome.output)")
                }
            }
        }
    }

    /// Offline, only the newest feed this machine accepted from the gallery and key is shown:
    /// before, any of the last 16 was, so a cache directory holding an older accepted edition
    /// rolled the prices back.
    @Test func offlineOnlyTheNewestAcceptedFeedOfTheGalleryIsShown() async throws {
        let trust = testGalleryTrust
        let other = TemporaryDirectory()
        func otherDatabase() -> ImagePipeline { ImagePipeline(configuration: .init(diskDirectory: other.url, synchronizesWrites: false)) }
        let (galleryURL, old, new) = try await withGallery { galleryURL in
            let old = try await EmojiArtModel(galleryURL: galleryURL, pipeline: pipeline(), trust: trust).loadImages()
            try await Self.revise(galleryURL)
            // Another instance, its own cache, the same trust file: accepts the revision.
            let new = try await EmojiArtModel(galleryURL: galleryURL, pipeline: otherDatabase(), trust: trust).loadImages()
            #expect(new != old)
            return (galleryURL, old, new)
        }
        let stale = EmojiArtModel(galleryURL: galleryURL, pipeline: pipeline(), trust: trust, offline: true)
        let error = await #expect(throws: EmojiArtModel.Error.self) { try await stale.loadImages() }
        #expect(error == .unauthenticatedFeed(
            url: galleryURL.absoluteString + "/gallery/images", failure: .storedFeedSuperseded(gallery: galleryURL.originKey)
        ))
        #expect("\(error.map { "\($0)" } ?? "")".contains("older than the newest feed this machine authenticated from it"))
        #expect(await stale.imageFeed.isEmpty && stale.signatureFailures.value == ["stored_feed_superseded": 1])
        let newest = EmojiArtModel(galleryURL: galleryURL, pipeline: otherDatabase(), trust: trust, offline: true)
        #expect(try await newest.loadImages() == new && new != old)
    }
}

/// The options that bind the feed to its gallery and pace its checks: refused when they are not
/// what they say, and described in `--help`.
extension CommandLineTests {
    @Test(arguments: ["gallery.example", "ftp://gallery.example", "http://gallery.example/feed", "http://gallery.example?x=1", "http://user@gallery.example"])
    func aGalleryOriginThatIsNoOriginIsRefused(origin: String) async throws {
        let app = try await run(["sync", "--gallery", "http://127.0.0.1:9", "--gallery-origin", origin])
        #expect(app.status == 64, "a usage error: \(app.output)")
        #expect(app.output.contains("--gallery-origin must be an origin, http(s)://host[:port] with no path, got \(origin)"), "\(app.output)")
        let gallery = try await run(["gallery", "--port", "0", "--public-origin", origin])
        #expect(gallery.status == 64, "a usage error: \(gallery.output)")
        #expect(gallery.output.contains("--public-origin must be an origin"), "\(gallery.output)")
    }

    @Test func aFeedCheckIntervalOutsideADayIsRefusedAndTheOptionsAreDescribed() async throws {
        for value in ["-1", "86401"] {
            let outcome = try await run(["app", "--gallery", "http://127.0.0.1:9", "--feed-check-interval=\(value)"])
            #expect(outcome.status == 64, "a usage error: \(outcome.output)")
            #expect(outcome.output.contains("--feed-check-interval must be 0 to 86400 seconds, got \(value)"), "\(outcome.output)")
        }
        let app = try await run(["app", "--help"])
        #expect(app.output.contains("--gallery-origin") && app.output.contains("--feed-check-interval"), "\(app.output)")
        #expect(try await run(["sync", "--help"]).output.contains("--gallery-origin"))
        #expect(try await run(["gallery", "--help"]).output.contains("--public-origin"))
    }
}
