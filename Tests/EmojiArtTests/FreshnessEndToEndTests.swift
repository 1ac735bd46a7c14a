import EmojiArtApp
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GalleryServer
import Hummingbird
import HummingbirdTesting
import ImageCache
import Testing
import TestSupport

/// HTTP freshness from the gallery to the app: a real gallery on 127.0.0.1:0 and a real cache
/// directory, both dated by one wall clock the test moves. Requests are counted at the gallery
/// (its /metrics), never inside the client.
@Suite(.timeLimit(.minutes(3))) struct FreshnessEndToEndTests {
    let clock = TestWallClock()
    let directory = TemporaryDirectory()
    /// The machine's trust file, shared by every start over ``directory``: a stored feed is used
    /// only as the bytes a start on this machine authenticated.
    let trust = testGalleryTrust

    /// A real gallery dated by the test's clock, revisable on request, with `cacheControl`.
    func withGallery<T: Sendable>(
        cacheControl: String? = nil, _ body: (URL) async throws -> T
    ) async throws -> T {
        let configuration = GalleryConfiguration(
            port: 0, signingKey: testGalleryKey, now: clock.now, cacheControl: cacheControl, revisionInterval: .zero
        )
        return try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            try await body(URL(string: "http://127.0.0.1:\(port)")!)
        }
    }

    /// A sync in a new process, as far as the cache knows: a new pipeline over the same directory.
    func sync(_ galleryURL: URL, offline: Bool = false) async throws -> Sync.Report {
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false), now: clock.now)
        let model = EmojiArtModel(galleryURL: galleryURL, pipeline: pipeline, trust: trust, now: clock.now, offline: offline)
        return try await Sync(model: model).run()
    }

    /// The gallery's own counts: requests by route and status, and body bytes served.
    struct GalleryCounts: Equatable {
        var requests: [String: Int] = [:]
        var bytes = 0
        func images(_ status: Int) -> Int { requests["/gallery/image \(status)"] ?? 0 }
        var total: Int { requests.values.reduce(0, +) }
    }

    func counts(_ galleryURL: URL) async throws -> GalleryCounts {
        let (data, _) = try await URLSession.shared.data(from: galleryURL.appendingPathComponent("metrics"))
        var counts = GalleryCounts()
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let value = line.split(separator: " ").last.flatMap { Double($0) }.map { Int($0) } ?? 0
            if line.hasPrefix("gallery_http_requests_total{") {
                let labels = line.split(separator: "\"")
                let route = labels[1], status = labels[3]
                // The scrape itself is not counted: it is answered after it is read.
                counts.requests["\(route) \(status)"] = value
            } else if line.hasPrefix("gallery_bytes_served_total ") {
                counts.bytes = value
            }
        }
        counts.requests["/metrics 200"] = nil
        return counts
    }

    @Test func freshCostsNothingStaleCostsOne304EachWithNoBody() async throws {
        try await withGallery { gallery in
            let cold = try await sync(gallery)
            #expect(cold.progress.verified == 78 && cold.thumbnails == 26)
            let afterCold = try await counts(gallery)
            #expect(afterCold.images(200) == 26 && afterCold.images(404) == 3)

            clock.advance(by: 600)  // inside max-age=3600
            let fresh = try await sync(gallery)
            #expect(fresh.progress.verified == 78)
            let afterFresh = try await counts(gallery)
            // No image request at all: the three missing pieces' 404s are stored with the images'
            // lifetime and still fresh; the feed got a 304.
            #expect(afterFresh.images(200) == 26 && afterFresh.images(304) == 0 && afterFresh.images(404) == 3)
            #expect(afterFresh.requests["/gallery/images 304"] == 1)
            #expect(fresh.stats.originFetches == 0 && fresh.stats.revalidations == 0 && fresh.stats.knownMissing == 3)

            clock.advance(by: 3_600)  // every entry is stale now
            let stale = try await sync(gallery)
            #expect(stale.progress.verified == 78 && stale.thumbnails == 26)
            let afterStale = try await counts(gallery)
            #expect(afterStale.images(304) == 26 && afterStale.images(200) == 26 && afterStale.images(404) == 6)
            #expect(afterStale.bytes == afterFresh.bytes, "a 304 has no body, and neither has the feed's")
            #expect(stale.stats.revalidations == 26 && stale.stats.refreshed == 0)
            #expect(TerminalText.summary(stale).contains("not modified    26"), "\(TerminalText.summary(stale))")

            // The 304s made the entries fresh again, on disk.
            let again = try await sync(gallery)
            #expect(again.stats.revalidations == 0 && again.stats.originFetches == 0)
        }
    }

    @Test func aRevisionShowsNewArtAndRemakesItsThumbnailsOnce() async throws {
        try await withGallery { gallery in
            _ = try await sync(gallery)
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false), now: clock.now)
            let model = EmojiArtModel(galleryURL: gallery, pipeline: pipeline, trust: trust, now: clock.now)
            try await model.loadImages()
            let thumbnail = ThumbnailProcessor.catalogThumbnail(size: 200)
            func thumbnails(_ pieces: [Int]) async throws -> [Int: [UInt8]] {
                var result: [Int: [UInt8]] = [:]
                for piece in pieces {
                    let file = try #require(model.feedByPiece.value[piece])
                    result[piece] = try await pipeline.image(for: model.imageRequest(file, processor: thumbnail)).data
                }
                return result
            }
            var request = URLRequest(url: gallery.appendingPathComponent("gallery/test/revise"))
            request.httpMethod = "POST"
            let (answer, _) = try await URLSession.shared.data(for: request)
            struct Revision: Decodable { var pieces: [Int] }
            let revised = try JSONDecoder().decode(Revision.self, from: answer).pieces
            #expect(revised.count == 3)
            let before = try await thumbnails(revised)
            let beforeCounts = try await counts(gallery)

            // No time passes: every image is still fresh, but the feed (no-cache) is asked
            // again, and lists new checksums for the revised pieces.
            let report = try await sync(gallery)
            #expect(report.progress.verified == 78, "\(TerminalText.summary(report))")
            let afterCounts = try await counts(gallery)
            #expect(afterCounts.images(200) - beforeCounts.images(200) == 3, "one download per changed piece")
            #expect(afterCounts.images(304) == beforeCounts.images(304), "unchanged pieces cost nothing while fresh")
            #expect(report.stats.refreshed == 3)

            try await model.loadImages()
            let after = try await thumbnails(revised)
            for piece in revised { #expect(before[piece] != after[piece], "piece \(piece) shows its new art") }

            // Remade once: the next sync finds everything, thumbnails included, on disk.
            let next = try await sync(gallery)
            #expect(next.stats.refreshed == 0 && next.stats.originFetches == 0)
            #expect(try await counts(gallery).images(200) == afterCounts.images(200))
        }
    }

    @Test func theWebAppNoticesARevisionWhenTheCatalogIsLoaded() async throws {
        try await withGallery { gallery in
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false), now: clock.now)
            let model = EmojiArtModel(galleryURL: gallery, pipeline: pipeline, trust: trust, now: clock.now)
            let configuration = AppConfiguration(port: 0, galleryURL: gallery, trust: trust)
            let router = try EmojiArtApp.buildRouter(configuration, model: model, pipeline: pipeline)
            await model.loadAndVerify()
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            try await app.test(.router) { client in
                func thumbnail(_ piece: Int) async throws -> [UInt8] {
                    try await client.execute(uri: "/thumbs/\(piece)", method: .get) { [UInt8](buffer: $0.body) }
                }
                // An unchanged feed: the catalog as it was, for one 304 once the feed check
                // interval (30 s on the app's clock) is over.
                let before = try await counts(gallery)
                try await client.execute(uri: "/", method: .get) { _ in }
                #expect(try await counts(gallery).requests["/gallery/images 304"] == before.requests["/gallery/images 304"], "within the interval")
                clock.advance(by: 30)
                try await client.execute(uri: "/", method: .get) { response in
                    #expect(String(buffer: response.body).contains("78 verified"))
                }
                #expect(try await counts(gallery).requests["/gallery/images 304"] == (before.requests["/gallery/images 304"] ?? 0) + 1)

                var request = URLRequest(url: gallery.appendingPathComponent("gallery/test/revise"))
                request.httpMethod = "POST"
                let (answer, _) = try await URLSession.shared.data(for: request)
                struct Revision: Decodable { var pieces: [Int] }
                let revised = try JSONDecoder().decode(Revision.self, from: answer).pieces
                var old: [Int: [UInt8]] = [:]
                for piece in revised { old[piece] = try await thumbnail(piece) }

                // The next load of the catalog after the interval finds the new feed and verifies it again.
                clock.advance(by: 30)
                try await client.execute(uri: "/", method: .get) { response in
                    #expect(String(buffer: response.body).contains("Verifying"))
                }
                await model.waitUntilDone()
                try await client.execute(uri: "/", method: .get) { response in
                    #expect(String(buffer: response.body).contains("78 verified"))
                }
                for piece in revised {
                    let new = try await thumbnail(piece)
                    #expect(new != old[piece], "piece \(piece) shows its new art")
                }
                #expect(await pipeline.stats().refreshed == 3)
                let metrics = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
                #expect(metrics.contains("emojiart_refreshed_total 3"), "\(metrics)")
            }
        }
    }

    @Test func noStoreAnswersLeaveNothingOnDisk() async throws {
        try await withGallery(cacheControl: "no-store") { gallery in
            let report = try await sync(gallery)
            #expect(report.progress.verified == 78 && report.thumbnails == 26)
            // Only the feed (no-cache, which may be stored) is on disk.
            #expect(directory.fileNames.filter { $0.count == 64 }.count == 1)
            let before = try await counts(gallery).images(200)
            let again = try await sync(gallery)
            #expect(again.stats.diskHits == 0)
            // At least once per piece, not exactly: nothing no-store is kept, so each image made
            // from an original downloads it again unless it joins a download still in flight,
            // which depends on timing (95 to 98 answers in three runs on 2026-11-26).
            #expect(try await counts(gallery).images(200) - before >= 26, "every piece downloaded again")
        }
    }

    @Test func offlineSendsNothingAndNamesWhatTheCacheCannotAnswer() async throws {
        try await withGallery { gallery in
            await #expect(throws: EmojiArtModel.Error.self) { try await sync(gallery, offline: true) }
            _ = try await sync(gallery)
            // One original gone from the cache, and its thumbnail with it.
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false), now: clock.now)
            await pipeline.setUp()
            pipeline.disk!.remove(forKey: gallery.absoluteString + "/gallery/image?5")
            pipeline.disk!.remove(forKey: gallery.absoluteString + "/gallery/image?5#" + ThumbnailProcessor.catalogThumbnail(size: 200).identifier)
            let before = try await counts(gallery)
            clock.advance(by: 86_400)
            let offline = try await sync(gallery, offline: true)
            #expect(try await counts(gallery) == before, "offline sends nothing")
            // Piece 5's three entries; the nine of the pieces the gallery never had are known
            // missing (their 404s are stored), however stale.
            #expect(offline.progress.verified == 75 && offline.progress.notCached == 3 && offline.progress.missing == 9)
            #expect(!offline.succeeded)
            let summary = TerminalText.summary(offline)
            #expect(summary.contains("/gallery/image?5"), "\(summary)")
            #expect(summary.contains("the cache does not hold this image"))
            #expect(summary.contains("offline: nothing was sent"))
        }
    }

    @Test func withTheGalleryDownTheCachedCatalogIsShownAndThePageSaysSo() async throws {
        let galleryURL = try await withGallery { gallery in
            _ = try await sync(gallery)
            return gallery
        }
        clock.advance(by: 7_200)  // stale, and nobody to ask
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false), now: clock.now)
        let model = EmojiArtModel(galleryURL: galleryURL, pipeline: pipeline, trust: trust, now: clock.now)
        await model.loadAndVerify()
        #expect(model.feedOrigin.value?.isGalleryUnreachable == true)
        #expect(model.progress.value.verified == 78)
        // At least once per piece, not exactly: an image made from an original gets its own
        // stale answer unless it joins a load of that original still in flight, which depends
        // on timing (64 to 66 in three runs on 2026-11-26).
        #expect(await pipeline.stats().staleAnswers >= 26, "each piece at least once")
        let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: trust)
        let router = try EmojiArtApp.buildRouter(configuration, model: model, pipeline: pipeline)
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.router) { client in
            try await client.execute(uri: "/", method: .get) { response in
                let html = String(buffer: response.body)
                #expect(html.contains("id=\"feed-notice\">The gallery is unreachable"))
                #expect(html.contains("78 verified"))
            }
            try await client.execute(uri: "/thumbs/5", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }
}
