import AsyncHTTPClient
@testable import EmojiArtApp
import Foundation
import GalleryServer
import Hummingbird
import HummingbirdTesting
import ImageCache
import Imaging
import NIOHTTP1
import Synchronization
import Testing
import TestSupport
import GalleryFeed

@Suite struct WebRouteTests {
    /// The app's router against a live gallery, after verification finished.
    func withApp<T: Sendable>(
        faults: FaultInjection = .none, gate: ImageGate? = nil, ready: Bool = true,
        _ body: @Sendable (any TestClientProtocol, EmojiArtModel, ImagePipeline) async throws -> T
    ) async throws -> T {
        try await withGallery(faults: faults, gate: gate) { galleryURL, pipeline in
            let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
            let model = makeModel(galleryURL, pipeline)
            let router = try EmojiArtApp.buildRouter(configuration, model: model, pipeline: pipeline)
            if ready { await model.loadAndVerify() }
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            return try await app.test(.router) { client in try await body(client, model, pipeline) }
        }
    }

    @Test func catalogListsEveryEntryWithPlaceholdersForTheMissing() async throws {
        try await withApp { client, _, _ in
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/html") == true)
                let html = String(buffer: response.body)
                #expect(html.components(separatedBy: "class=\"card\"").count - 1 == 87)
                #expect(html.components(separatedBy: "src=\"/thumbs/").count - 1 == 78)
                let grid = try #require(html.components(separatedBy: "<template").first)
                #expect(grid.components(separatedBy: "<div class=\"placeholder\" data-placeholder>").count - 1 == 9)
                #expect(html.contains("Grinning Face"))
                #expect(html.contains("78 verified · 9 missing"))
                #expect(html.contains("Clear memory cache") && html.contains("Clear disk cache"))
                #expect(html.contains("id=\"memory-hits\"") && html.contains("id=\"origin-fetches\""))
                #expect(html.contains("id=\"revalidations\"") && html.contains("id=\"refreshed\"") && html.contains("id=\"stale-answers\""))
            }
        }
    }

    @Test func thumbnailAndLargeVariantsAreServedFromOneOriginal() async throws {
        try await withApp { client, _, pipeline in
            let thumb = try await client.execute(uri: "/thumbs/5", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/png")
                #expect(response.headers[.cacheControl] == "no-cache")  // --http-cache revalidate, the default
                return try Imaging().probe([UInt8](buffer: response.body))
            }
            #expect(thumb.width == 111 && thumb.height == 200)
            let large = try await client.execute(uri: "/large/5", method: .get) { response in
                try Imaging().probe([UInt8](buffer: response.body))
            }
            #expect(large.width == 332 && large.height == 600)
            // Verification fetched every original; the variants added no origin request.
            #expect(await pipeline.stats().originFetches == 29)
        }
    }

    @Test(arguments: ["/thumbs/10", "/thumbs/99", "/thumbs/abc", "/large/0"])
    func imagesThatCannotExistAre404(uri: String) async throws {
        try await withApp { client, _, _ in
            try await client.execute(uri: uri, method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test func detailsPageShowsNamePriceAndStatus() async throws {
        try await withApp { client, model, _ in
            let entry = try #require(await model.entry(at: 4))
            try await client.execute(uri: "/pieces/4", method: .get) { response in
                #expect(response.status == .ok)
                let html = String(buffer: response.body)
                #expect(html.contains(entry.file.name))
                #expect(html.contains(entry.file.formattedPrice))
                #expect(html.contains(entry.status.explanation.replacingOccurrences(of: "'", with: "&#39;")))
            }
            try await client.execute(uri: "/pieces/500", method: .get) { response in
                #expect(response.status == .notFound)
                let html = String(buffer: response.body)
                #expect(html.contains("<html") && html.contains("Not found"))
            }
        }
    }

    /// A page's error and a path no route knows are pages a person reads; an image route's
    /// error stays short JSON for the code that asked (the error pages are added to the routes
    /// they serve, not filtered by path).
    @Test func errorsArePagesWherePeopleReadThemAndJSONElsewhere() async throws {
        try await withApp { client, _, _ in
            for uri in ["/pieces/500", "/no-such-page", "/thumbs/"] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .notFound, "\(uri)")
                    #expect(response.headers[.contentType]?.hasPrefix("text/html") == true, "\(uri)")
                    #expect(String(buffer: response.body).contains("Not found"), "\(uri)")
                }
            }
            for (uri, status) in [("/thumbs/9999", HTTPResponse.Status.notFound), ("/large/abc", .notFound)] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == status, "\(uri)")
                    #expect(response.headers[.contentType]?.hasPrefix("application/json") == true, "\(uri)")
                    #expect(!String(buffer: response.body).contains("<html"), "\(uri)")
                }
            }
        }
    }

    @Test func clearButtonsEmptyTheirTier() async throws {
        try await withApp { client, _, pipeline in
            #expect(await pipeline.stats().memoryEntries > 0)
            // The router's test client asks for the host `localhost`.
            try await client.execute(uri: "/cache/clear-memory", method: .post, headers: [.referer: "http://localhost/pieces/3"]) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location] == "/pieces/3")
            }
            // Back to the page the form was on only when it is one of the app's own pages.
            try await client.execute(uri: "/cache/clear-memory", method: .post, headers: [.referer: "http://x/pieces/3"]) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location] == "/")
            }
            #expect(await pipeline.stats().memoryEntries == 0)
            // Memory is empty, the disk is not: the thumbnail is made from its original read
            // from disk (the engine's own read: no hit, no caller was answered from disk) and
            // stored; asked again after memory is emptied once more, it is itself the one disk
            // hit (its original is not needed).
            let before = await pipeline.stats()
            _ = try await client.execute(uri: "/thumbs/5", method: .get)
            await pipeline.flush()  // the disk write follows the answer
            let made = await pipeline.stats()
            #expect(made.diskHits == before.diskHits && made.diskEntries == before.diskEntries + 1)
            _ = try await client.execute(uri: "/cache/clear-memory", method: .post)
            _ = try await client.execute(uri: "/thumbs/5", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "image/png")
            }
            await pipeline.flush()
            let again = await pipeline.stats()
            #expect(again.diskHits == made.diskHits + 1 && again.originFetches == made.originFetches)

            #expect(await pipeline.stats().diskEntries > 0)
            try await client.execute(uri: "/cache/clear-disk", method: .post) { response in
                #expect(response.status == .seeOther)
            }
            #expect(await pipeline.stats().diskEntries == 0)
        }
    }

    @Test func metricsHealthAndStats() async throws {
        try await withApp { client, _, pipeline in
            let hitsBefore = await pipeline.stats().memoryHits
            _ = try await client.execute(uri: "/thumbs/5", method: .get)
            _ = try await client.execute(uri: "/thumbs/5", method: .get)
            let text = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
            let stats = await pipeline.stats()
            // Verification fetched 29 originals (3 missing); the first thumbnail was made from the
            // original in memory and stored; the second was a memory hit. The feed is an entry too,
            // and so are the 3 missing pieces' 404s (known-missing entries).
            #expect(stats.originFetches == 29 && stats.failures == 3 && stats.diskEntries == 31)
            #expect(text.contains(#"emojiart_cache_hits_total{tier="memory"} \#(stats.memoryHits)"#), "\(text)")
            // One memory hit: the second request's thumbnail. Making the first from the original,
            // in memory since verification, is the engine's own look-up, not an answer.
            #expect(stats.memoryHits == hitsBefore + 1)
            #expect(text.contains(#"emojiart_cache_hits_total{tier="disk"} 0"#))
            #expect(text.contains(#"emojiart_cache_hits_total{tier="in_flight"} \#(stats.coalesced)"#))
            #expect(text.contains("emojiart_origin_fetches_total 29"))
            #expect(text.contains("emojiart_load_failures_total 3"))
            // The freshness counters are there from the start (the feed's 304s are not images').
            for counter in ["revalidations", "refreshed", "stale_answers"] {
                #expect(text.contains("emojiart_\(counter)_total 0"), "\(counter)")
            }
            #expect(text.contains("emojiart_disk_entries 31"))
            #expect(text.contains("emojiart_disk_bytes \(stats.diskBytes)") && stats.diskBytes > 26 * 10_000)
            #expect(text.contains("emojiart_memory_entries \(stats.memoryEntries)"))
            let health = try await client.execute(uri: "/health", method: .get) { String(buffer: $0.body) }
            #expect(health.contains("\"ready\""))
            let served = try await client.execute(uri: "/stats", method: .get) { response in
                try JSONDecoder().decode(ImagePipeline.Stats.self, from: Data(String(buffer: response.body).utf8))
            }
            #expect(served == stats)
        }
    }

    @Test func aDeadGalleryShowsAnErrorPageWithRetry() async throws {
        let directory = TemporaryDirectory()
        let galleryURL = URL(string: "http://127.0.0.1:9")!
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url))
        let model = makeModel(galleryURL, pipeline)
        let router = try EmojiArtApp.buildRouter(.init(port: 0, galleryURL: galleryURL, trust: testGalleryTrust), model: model, pipeline: pipeline)
        await model.loadAndVerify()
        let app = Application(router: router)
        try await app.test(.router) { client in
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let html = String(buffer: response.body)
                #expect(html.contains("The gallery is not answering"))
                #expect(html.contains("action=\"/retry\""))
                #expect(!html.contains("Error(") && !html.contains("Swift."))
            }
            try await client.execute(uri: "/retry", method: .post) { response in
                #expect(response.status == .seeOther)
            }
        }
    }

    @Test func loadingPageShowsProgressBeforeVerificationEnds() async throws {
        // The gallery holds every image until the test lets them through: verification cannot
        // finish before the page is asked for, however fast the machine.
        let gate = ImageGate()
        try await withApp(gate: gate, ready: false) { client, model, _ in
            await model.start()
            for await progress in model.progress.stream() where progress.total > 0 { break }
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok)
                let html = String(buffer: response.body)
                #expect(html.contains("<progress id=\"progress\" max=\"87\" value=\"0\""))
                // The live bar's script is served by the app (the page allows no inline script).
                #expect(html.contains("<script src=\"/assets/app.js\"></script>"))
                #expect(!html.contains("id=\"catalog\""))
            }
            gate.open()
            await model.waitUntilDone()
            try await client.execute(uri: "/", method: .get) { response in
                #expect(String(buffer: response.body).contains("id=\"catalog\""))
            }
        }
    }

    @Test func eventsStreamProgressPhaseAndStats() async throws {
        let directory = TemporaryDirectory()
        try await withGallery { galleryURL, _ in
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
            try await withLiveServer({ try await EmojiArtApp.buildApplication(configuration, pipeline: pipeline, onServerRunning: $0) }) { port in
                let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/events"), timeout: .seconds(30))
                #expect(response.headers.first(name: "content-type") == "text/event-stream")
                var text = ""
                for try await chunk in response.body {
                    text += String(buffer: chunk)
                    if text.contains("event: stats"), text.contains("\"name\":\"ready\""), text.contains("\"completed\":87") { break }
                }
                #expect(text.contains("event: progress"))
                #expect(text.contains("event: phase"))
                #expect(text.contains("event: stats"))
            }
        }
    }

    /// A client cannot hold every connection with streams it never reads: past the limit, an
    /// `/events` request is answered 503 with `Retry-After`; a stream whose client went away gives
    /// its place back when the connection closes, not at its next heartbeat (an hour here; before,
    /// a client that opened and dropped streams in a loop held every place with none open), with
    /// the fast lane and without.
    @Test(.timeLimit(.minutes(3)), arguments: [true, false])
    func eventStreamsAreCappedAndALeftStreamGivesItsPlaceBack(fastLane: Bool) async throws {
        try await withVerifiedApp(fastLane: fastLane, configure: { $0.maxEventStreams = 2; $0.eventStreamHeartbeat = .seconds(3600) }) { port, _, services in
            let url = "http://127.0.0.1:\(port)/events"
            @Sendable func follow() async throws {
                let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(600))
                for try await _ in response.body {}
            }
            let open = services.eventStreams.open
            let first = Task { try await follow() }
            let second = Task { try await follow() }
            defer {
                first.cancel()
                second.cancel()
            }
            for await count in open.stream() where count == 2 { break }

            let refused = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
            try #require(refused.status == .serviceUnavailable, "a third stream was opened")
            #expect(refused.headers.first(name: "retry-after") == "30")
            let body = String(buffer: try await refused.body.collect(upTo: 100_000))
            #expect(body.contains("2 event streams are open"), "\(body)")
            #expect(open.value == 2, "a refused request takes no place")

            first.cancel()  // the client goes away: its connection closes
            for await count in open.stream() where count == 1 { break }
            let third = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
            #expect(third.status == .ok)
        }
    }

    /// A stream ends once it has lasted its lifetime and gives its place back, even to a client
    /// that never reads (whose sockets' buffers a stream's few bytes would take hours to fill,
    /// before the send deadline could see it).
    @Test(.timeLimit(.minutes(2)), arguments: [true, false])
    func anEventStreamEndsAtItsLifetimeEvenForAClientThatNeverReads(fastLane: Bool) async throws {
        try await withVerifiedApp(
            fastLane: fastLane, configure: { $0.eventStreamHeartbeat = .seconds(3600); $0.eventStreamLifetime = .milliseconds(300) }
        ) { port, _, services in
            let slots = services.eventStreams
            let channel = try await NonReadingClient.send("GET /events HTTP/1.1\nHost: 127.0.0.1\n\n", port: port)
            defer { channel.close(promise: nil) }
            // Its place taken, then given back (a stream sees the newest count: the 1 may pass
            // unseen on a busy machine, the 0 after it does not).
            for await count in slots.open.stream() where count == 0 && slots.taken.load(ordering: .relaxed) == 1 { break }
            #expect(slots.open.value == 0, "the stream gave its place back")
        }
    }
}
