import EmojiArtApp
import Foundation
import GalleryServer
import HTTPCaching
import Hummingbird
import HummingbirdTesting
import ImageCache
import Testing
import TestSupport

/// Issue 48, part 3: a retry nobody can use against others. Before, `POST /retry` (which the
/// page offers to anyone) fetched the feed whatever `--feed-check-interval` said and verified
/// every entry again, and meanwhile every visitor got the "Verifying..." page. Now retries join
/// the one under way, the feed is asked for at most once per interval unless the stored feed
/// failed its last check, and the failed entries are verified again behind the catalog, which
/// keeps being served. A real gallery (dated by the test's clock, which the test moves) and a real
/// proxy that counts the feed requests; a gate holds the gallery's answers: nothing sleeps.
@Suite(.timeLimit(.minutes(3))) struct RetryTests {
    let clock = TestWallClock()
    let cache = TemporaryDirectory()
    let trust = testGalleryTrust

    /// A gallery (its images held at `gate`, when given) behind a counting proxy, a model of it
    /// with the app's default feed check interval (30 s) on the test's clock, and the app's
    /// routes; the catalog is loaded and verified first (`permits` images let through for it).
    func withCatalog(
        gate: ImageGate? = nil, permits: Int = 0,
        _ body: @Sendable (_ client: any TestClientProtocol, _ model: EmojiArtModel, _ proxy: TamperingProxy) async throws -> Void
    ) async throws {
        let configuration = GalleryConfiguration(port: 0, imageGate: gate, signingKey: testGalleryKey, now: clock.now)
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:\(port)")!)
            try await proxy.run { proxyURL in
                let pipeline = ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false), now: clock.now)
                let model = EmojiArtModel(galleryURL: proxyURL, pipeline: pipeline, trust: trust, now: clock.now, galleryOrigin: proxy.galleryOrigin)
                gate?.release(permits)
                await model.loadAndVerify()
                #expect(model.phase.value == .ready && model.progress.value.verified == 78)
                let router = try EmojiArtApp.buildRouter(AppConfiguration(port: 0, galleryURL: proxyURL, trust: trust), model: model, pipeline: pipeline)
                try await Application(router: router).test(.router) { client in try await body(client, model, proxy) }
            }
        }
    }

    /// With a catalog shown, a retry verifies the failed entries again (the book's missing
    /// pieces 0, 10 and 20, whose remembered 404s it forgets) while the gallery holds their
    /// answers, and page loads meanwhile get the catalog, never the "Verifying" page; the counts
    /// come out as they were, and the feed was not asked for within its interval.
    @Test func aRetryWithACatalogVerifiesBehindIt() async throws {
        let gate = ImageGate()
        // One request a piece for the first verification (29: three missing), none beyond.
        try await withCatalog(gate: gate, permits: 29) { client, model, proxy in
            let before = model.progress.value
            let feedRequests = proxy.feedRequests
            try await client.execute(uri: "/retry", method: .post) { #expect($0.status == .seeOther) }
            // The retried pieces wait at the gallery: verification is under way.
            try await gate.waitUntilHolding(3)
            for _ in 0..<5 {
                try await client.execute(uri: "/", method: .get) { response in
                    let html = String(buffer: response.body)
                    #expect(response.status == .ok)
                    #expect(html.contains("id=\"catalog\"") && !html.contains("Verifying"), "the catalog, not the loading page")
                }
            }
            #expect(model.phase.value == .ready)
            gate.release(3)
            await model.waitUntilRetried()
            #expect(gate.status.passed == 32, "the three missing pieces asked for again, nothing else")
            #expect(model.progress.value == before, "9 missing again, each counted once: \(model.progress.value)")
            #expect(proxy.feedRequests == feedRequests, "within the interval, no feed request")
        }
    }

    /// Fifty retries at once, past the interval, make one feed request; fifty more within it,
    /// none. When the stored feed failed its check (the gallery's answers withheld), a retry
    /// asks at once, within the interval too, until the feed is confirmed again.
    @Test func manyRetriesMakeAtMostOneFeedRequestAnInterval() async throws {
        try await withCatalog { client, model, proxy in
            let start = proxy.feedRequests
            @Sendable func retries(_ count: Int) async throws {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<count {
                        group.addTask { try await client.execute(uri: "/retry", method: .post) { #expect($0.status == .seeOther) } }
                    }
                    try await group.waitForAll()
                }
                await model.waitUntilRetried()
            }
            clock.advance(by: 31)
            try await retries(50)
            #expect(proxy.feedRequests == start + 1, "one feed request for fifty retries")
            #expect(model.feedOrigin.value == .revalidated && model.phase.value == .ready)
            try await retries(50)
            #expect(proxy.feedRequests == start + 1, "none within the interval")

            // The gallery's answers withheld: the stored feed fails its check...
            proxy.attack(.notModifiedUnsigned)
            clock.advance(by: 31)
            try await retries(1)
            #expect(model.feedOrigin.value?.isNotReauthenticated == true)
            let failed = proxy.feedRequests
            #expect(failed == start + 3, "a 304, refused, then the whole feed asked for")
            // ...so a retry asks again at once; once it is confirmed, the interval holds again.
            proxy.attack(.none)
            try await retries(10)
            #expect(proxy.feedRequests == failed + 1 && model.feedOrigin.value == .revalidated)
            try await retries(10)
            #expect(proxy.feedRequests == failed + 1)
            #expect(model.phase.value == .ready)
        }
    }
}
