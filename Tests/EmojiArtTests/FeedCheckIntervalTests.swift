import EmojiArtApp
import Foundation
import GalleryServer
import HTTPCaching
import Hummingbird
import HummingbirdTesting
import ImageCache
import MessageSignatures
import Testing
import TestSupport

/// Issue 40: the feed is revalidated on the app's clock, at most once per
/// `--feed-check-interval`, whatever page loads ask and whatever the answers' unsigned fields
/// say; and the catalog says how old it is, its prices marked stale ("as of ...") past its
/// signature's life, online or offline. A real gallery and proxy on 127.0.0.1, both dated by the
/// test's clock, which the test moves: nothing sleeps.
@Suite(.timeLimit(.minutes(3))) struct FeedCheckIntervalTests {
    let clock = TestWallClock()
    let cache = TemporaryDirectory()
    let trust = testGalleryTrust

    func withProxiedGallery<T: Sendable>(_ body: (_ proxy: TamperingProxy, _ proxyURL: URL) async throws -> T) async throws -> T {
        let configuration = GalleryConfiguration(port: 0, signingKey: testGalleryKey, now: clock.now)
        return try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:\(port)")!)
            return try await proxy.run { proxyURL in try await body(proxy, proxyURL) }
        }
    }

    func model(_ proxy: TamperingProxy, _ proxyURL: URL, offline: Bool = false) -> EmojiArtModel {
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false), now: clock.now)
        // The model's own default interval (30 s): the one the app runs with.
        return EmojiArtModel(galleryURL: proxyURL, pipeline: pipeline, trust: trust, now: clock.now, offline: offline, galleryOrigin: proxy.galleryOrigin)
    }

    /// Twenty catalog loads within the interval send no feed request (before: one each, 302
    /// signed 304s for 300 loads); the first after it sends one. Neither `no-store` nor a year's
    /// `max-age` on the feed's answers changes that, and the authenticated feed is kept: an
    /// offline start after shows it.
    @Test(arguments: ["", "no-store", "public, max-age=31536000, immutable"])
    func catalogLoadsCheckTheFeedAtMostOncePerInterval(cacheControl: String) async throws {
        try await withProxiedGallery { proxy, proxyURL in
            if !cacheControl.isEmpty { proxy.attack(.feedCacheControl(cacheControl)) }
            let model = model(proxy, proxyURL)
            await model.loadAndVerify()
            #expect(model.phase.value == .ready && model.feedOrigin.value == .downloaded)
            let before = proxy.feedRequests
            let router = try EmojiArtApp.buildRouter(AppConfiguration(port: 0, galleryURL: proxyURL, trust: trust), model: model, pipeline: model.pipeline)
            try await Application(router: router).test(.router) { client in
                for _ in 0..<20 {
                    try await client.execute(uri: "/", method: .get) { #expect($0.status == .ok) }
                }
            }
            #expect(proxy.feedRequests == before, "no feed request within the interval")
            #expect(model.skippedFeedChecks.value == 20)
            clock.advance(by: 29)
            #expect(await model.refreshIfFeedChanged() == false)
            #expect(proxy.feedRequests == before)
            clock.advance(by: 1)
            #expect(await model.refreshIfFeedChanged() == false)
            #expect(proxy.feedRequests == before + 1, "the interval is over: one check")
            #expect(model.feedOrigin.value == .revalidated)
            #expect(await model.refreshIfFeedChanged() == false)
            #expect(proxy.feedRequests == before + 1)

            let offline = self.model(proxy, proxyURL, offline: true)
            #expect(try await offline.loadImages() == model.imageFeed, "the authenticated feed was kept (\(cacheControl))")
        }
    }

    /// The page and `sync` say when the feed was last authenticated. Past the signature's
    /// `expires` (the gallery signs for an hour), with the gallery's answers withheld (an
    /// unsigned 304 for every feed request), the prices are marked stale ("as of ..."): on the
    /// page, in `sync`'s summary, and offline.
    @Test func pricesPastTheSignaturesLifeAreMarkedStaleOnlineAndOffline() async throws {
        try await withProxiedGallery { proxy, proxyURL in
            let model = model(proxy, proxyURL)
            let authenticatedAt = clock.current
            await model.loadAndVerify()
            let fresh = try await Sync(model: model).run()
            let age = try #require(model.feedAge.value)
            #expect(age.authenticatedAt == authenticatedAt && age.validUntil == authenticatedAt.addingTimeInterval(3600))
            #expect(!age.isStale(at: clock.current))
            let when = authenticatedAt.formatted(.iso8601)
            #expect(TerminalText.summary(fresh).contains("Feed last authenticated at \(when)."), "\(TerminalText.summary(fresh))")

            // Every feed answer withheld from now on; an hour and a second later the prices are stale.
            proxy.attack(.notModifiedUnsigned)
            clock.advance(by: 3601)
            let withheld = try await Sync(model: model).run()
            #expect(withheld.feedOrigin?.isNotReauthenticated == true)
            let summary = TerminalText.summary(withheld)
            #expect(summary.contains("Prices as of \(when)") && summary.contains("stale"), "\(summary)")

            let offline = self.model(proxy, proxyURL, offline: true)
            let report = try await Sync(model: offline).run()
            #expect(report.feedOrigin == .offline)
            #expect(report.feedAge?.isStale(at: clock.current) == true)
            #expect(TerminalText.summary(report).contains("Prices as of \(when)"))
        }
    }

    /// The catalog page says it too: when fresh, when the feed was last authenticated; past the
    /// signature's life, with the gallery's answers withheld, the prices as of then.
    @Test func theCatalogPageSaysHowOldItsPricesAre() async throws {
        try await withProxiedGallery { proxy, proxyURL in
            let model = model(proxy, proxyURL)
            let when = clock.current.formatted(.iso8601)
            await model.loadAndVerify()
            let router = try EmojiArtApp.buildRouter(AppConfiguration(port: 0, galleryURL: proxyURL, trust: trust), model: model, pipeline: model.pipeline)
            try await Application(router: router).test(.router) { client in
                try await client.execute(uri: "/", method: .get) { response in
                    let html = String(buffer: response.body)
                    #expect(html.contains(#"<p class="summary" id="feed-age">Feed last authenticated at \#(when).</p>"#), "\(html)")
                }
                proxy.attack(.notModifiedUnsigned)
                clock.advance(by: 3601)
                try await client.execute(uri: "/", method: .get) { response in
                    let html = String(buffer: response.body)
                    #expect(html.contains(#"<p class="notice" id="feed-age">Prices as of \#(when)"#) && html.contains("stale"), "\(html)")
                    #expect(html.contains("could not be re-authenticated"))
                }
            }
        }
    }
}
