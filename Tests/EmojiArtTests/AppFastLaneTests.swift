@testable import EmojiArtApp
import FastLane
import Foundation
import GalleryServer
import Hummingbird
import HummingbirdCore
import ImageCache
import Logging
import NIOCore
import ServiceLifecycle
import Testing
import TestSupport
import GalleryFeed

/// The fast lane against Hummingbird alone: twin servers on one router, one model and one
/// pipeline, one with the lane and one without, asked the same things over raw connections.
@Suite(.timeLimit(.minutes(3))) struct AppFastLaneTests {
    struct Twins {
        let lanePort: Int
        let plainPort: Int
        let lane: FastLane
        let pipeline: ImagePipeline
        let services: AppServices
    }

    func withTwins(
        _ mode: HTTPCacheMode = .revalidate, gate: ImageGate? = nil, idleTimeout: TimeAmount? = nil,
        _ body: (Twins) async throws -> Void
    ) async throws {
        try await withGallery(gate: gate) { galleryURL, pipeline in
            let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust, httpCache: mode)
            let model = makeModel(galleryURL, pipeline)
            let (router, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: model, pipeline: pipeline)
            await model.loadAndVerify()
            let lane = FastLane(serverName: "EmojiArt", respond: ImageController<BasicRequestContext>(services: services).fastLane)
            let responder = router.buildResponder()
            func server(_ lane: FastLane?, _ running: @escaping @Sendable (Int) async -> Void) -> some Service {
                Application(
                    responder: responder, server: .http1(fastLane: lane, idleTimeout: idleTimeout),
                    configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "EmojiArt"),
                    onServerRunning: { await running($0.localAddress?.port ?? 0) }
                )
            }
            try await withLiveServer({ server(lane, $0) }) { lanePort in
                try await withLiveServer({ server(nil, $0) }) { plainPort in
                    try await body(Twins(lanePort: lanePort, plainPort: plainPort, lane: lane, pipeline: pipeline, services: services))
                }
            }
        }
    }

    /// One request on a new connection.
    func ask(_ port: Int, _ path: String, method: String = "GET", fields: [String] = []) async throws -> RawHTTPResponse {
        try await RawHTTPConnection.with(port: port) { connection in
            try await connection.send([path], method: method, fields: fields)
            return try #require(try await connection.response(head: method == "HEAD"))
        }
    }

    @Test(arguments: [HTTPCacheMode.revalidate, .immutable, .noStore])
    func everyAnswerIsTheRoutesAnswer(mode: HTTPCacheMode) async throws {
        try await withTwins(mode) { twins in
            let file = try #require(twins.services.model.feedByPiece.value[5])
            let version = twins.services.version(file, route: .thumbs, density: 1)
            // (path, method, fields, answered by the lane?) in order: the first of a variant is a
            // miss there (passed on) and a hit on the plain server, which asks second.
            // "ETAG" stands for the ETag of the first answer.
            var cases: [(String, String, [String], Bool)] = [
                ("/thumbs/5", "GET", [], false),
                ("/thumbs/5", "GET", [], true),
                ("/thumbs/5", "GET", ["If-None-Match: ETAG"], true),
                ("/thumbs/5", "GET", [#"If-None-Match: "other""#], true),
                ("/thumbs/5", "HEAD", [], true),
                // A host the app does not serve: the router's 421, never a memory hit.
                ("/thumbs/5", "GET", ["Host: evil.example"], false),
                ("/thumbs/5", "HEAD", ["Host: evil.example:80"], false),
                ("/thumbs/5", "GET", ["Host: localhost:8080"], true),
                ("/thumbs/5", "GET", ["Host: LOCALHOST."], true),
                ("/thumbs/5", "GET", ["Host: 127.0.0.1.evil.example"], false),
                ("/large/7", "HEAD", [], false),
                ("/large/7", "GET", [], true),
                ("/thumbs/9999", "GET", [], false),
                ("/thumbs/9999", "HEAD", [], false),  // an error page's head, passed on: no body
                ("/thumbs/10", "GET", [], false),  // every tenth piece is missing from the feed
                ("/thumbs/5?x=1", "GET", [], false),  // a parameter image URLs do not define: 400
                ("/thumbs/5?v=1&x=1", "GET", [], false),
                ("/thumbs/5?v=1&v=2", "GET", [], false),
                ("/thumbs/5/", "GET", [], false),
                // Each format and density is a variant of its own, with its answer: a miss first.
                ("/thumbs/5", "GET", ["Accept: image/webp,*/*"], false),
                ("/thumbs/5", "GET", ["Accept: image/webp,*/*"], true),
                ("/thumbs/5", "HEAD", ["Accept: image/webp,*/*"], true),
                ("/thumbs/5", "GET", ["Accept: image/avif;q=0,image/webp,*/*"], true),
                ("/thumbs/5", "GET", ["Accept: image/png"], true),
                ("/thumbs/2x/5", "GET", [], false),
                ("/thumbs/2x/5", "GET", [], true),
                ("/thumbs/2x/5", "GET", ["Accept: image/webp"], false),
                ("/thumbs/2x/5", "GET", ["Accept: image/webp"], true),
                ("/thumbs/3x/5", "GET", [], false),  // no such density: the router's 404
                // One spelling per route (issue 40): any other is a path no route has, 404.
                ("//thumbs/5", "GET", [], false),
                ("/thumbs//5", "GET", [], false),
                ("/thumbs/./5", "GET", [], false),
                ("/thumbs/2x/../5", "GET", [], false),
                ("/stats/", "GET", [], false),
                ("//stats", "GET", [], false),
                ("/metrics/.", "GET", [], false),
                ("/a/../health", "HEAD", [], false),
                ("/st%61ts", "GET", [], false),
                ("/pieces/5/", "GET", [], false),
                // A piece number has one spelling too: "05" is not 5.
                ("/thumbs/05", "GET", [], false),
                ("/thumbs/2x/007", "GET", [], false),
                ("/large/00", "GET", [], false),
                ("/pieces/05", "GET", [], false),
                ("/retry/", "POST", [], false),
                ("//", "GET", [], false),
            ]
            if mode == .immutable {
                cases += [("/thumbs/5?v=\(version)", "GET", [], true), ("/thumbs/5?v=0000000000000000", "GET", [], false)]
                let twice = twins.services.version(file, route: .thumbs, density: 2)
                cases += [("/thumbs/2x/5?v=\(twice)", "GET", ["Accept: image/webp"], true), ("/thumbs/2x/5?v=\(version)", "GET", [], false)]
            }
            // A format other than PNG is made in the background (its first request gets another
            // format at once, ImageFormatTests): these are made beforehand, on disk only, so each
            // one's first request is a miss the route answers from disk, as for the PNGs.
            let made = [1, 2].compactMap { twins.services.variant(piece: 5, kind: .init(route: .thumbs, density: $0, format: .webp))?.request }
            let prefetcher = ImagePrefetcher(pipeline: twins.pipeline)
            let disk = try #require(twins.pipeline.disk)
            #expect(await prefetcher.prefetch(made) == made.count)
            #expect(made.allSatisfy { disk.contains(key: $0.cacheKey) })
            #expect(made.count == 2 && made.allSatisfy { twins.pipeline.memory.peek($0.cacheKey) == nil })
            let unknown = try await ask(twins.plainPort, "/no-such-route")
            #expect(unknown.status == 404)
            var etag = ""
            for (path, method, template, byLane) in cases {
                let fields = template.map { $0.replacingOccurrences(of: "ETAG", with: etag) }
                let hitsBefore = await twins.pipeline.stats().memoryHits
                let answeredBefore = twins.lane.answered
                let viaLane = try await ask(twins.lanePort, path, method: method, fields: fields)
                let laneHits = await twins.pipeline.stats().memoryHits - hitsBefore
                #expect(twins.lane.answered - answeredBefore == (byLane ? 1 : 0), "\(method) \(path) \(fields)")
                let plainBefore = await twins.pipeline.stats().memoryHits
                let viaRouter = try await ask(twins.plainPort, path, method: method, fields: fields)
                let plainHits = await twins.pipeline.stats().memoryHits - plainBefore
                #expect(viaLane.without(["date"]) == viaRouter.without(["date"]), "\(method) \(path) \(fields)")
                if etag.isEmpty { etag = try #require(viaRouter["etag"]) }
                #expect(viaLane["date"] != nil && viaRouter["date"] != nil)
                #expect(viaLane["x-content-type-options"] == "nosniff", "every answer, the lane's too: \(method) \(path) \(fields)")
                if fields.first?.hasPrefix("Host: evil") == true { #expect(viaRouter.status == 421) }
                if path.contains("x=1") || path.contains("&v=") { #expect(viaRouter.status == 400, "\(path)") }
                if ["/thumbs/05", "/thumbs/2x/007", "/large/00", "/pieces/05"].contains(path) {
                    #expect(viaRouter.status == 404, "a piece number with a leading zero is no route: \(path)")
                }
                if !FastLane.hasOneSpelling(path) {
                    #expect(viaRouter.status == 404 && viaRouter["location"] == nil, "\(method) \(path)")
                    // The page of a path no route has (its toolbar's counters aside).
                    #expect(viaRouter["content-type"] == unknown["content-type"], "\(method) \(path)")
                    if method == "GET" { #expect(String(decoding: viaRouter.body, as: UTF8.self).contains("<h2>Not found</h2>"), "\(path)") }
                }
                if byLane { #expect(laneHits == 1 && plainHits == 1, "a lane answer counts its memory hit: \(method) \(path)") }
                if viaRouter.status == 200 || viaRouter.status == 304, path.hasPrefix("/thumbs/") || path.hasPrefix("/large/") {
                    #expect(viaRouter["vary"] == "Accept", "\(method) \(path) \(fields)")
                    let webp = fields.contains { $0.hasPrefix("Accept: image/webp") || $0.contains(",image/webp") }
                    if viaRouter.status == 200 { #expect(viaRouter["content-type"] == (webp ? "image/webp" : "image/png"), "\(path) \(fields)") }
                }
            }
            // The metrics route (passed on) shows the lane's hits with the router's.
            let metrics = String(decoding: try await ask(twins.lanePort, "/metrics").body, as: UTF8.self)
            let memoryHits = await twins.pipeline.stats().memoryHits
            #expect(metrics.contains(#"emojiart_cache_hits_total{tier="memory"} \#(memoryHits)"#))
        }
    }

    @Test func pipelinedAnswersKeepTheirOrder() async throws {
        let gate = ImageGate()
        gate.release(29)  // start-up verification: the feed lists 29 pieces, 3 of them missing (404)
        try await withTwins(gate: gate) { twins in
            #expect(gate.status.permits == 0 && gate.status.waiting == 0, "\(gate.status)")
            // Nothing cached: every variant needs its original from the gallery, through the gate.
            await twins.pipeline.clearMemory()
            await twins.pipeline.clear()
            gate.release(1)
            let thumbnail = try await ask(twins.plainPort, "/thumbs/5")  // now a memory hit
            #expect(thumbnail.status == 200, "\(String(decoding: thumbnail.body, as: UTF8.self))")

            // A miss held at the gate, then a hit, in one write: the hit's answer waits its turn.
            let (first, second) = try await RawHTTPConnection.with(port: twins.lanePort) { connection in
                try await connection.send(["/large/11", "/thumbs/5"])
                try await gate.waitUntilHolding(1)
                gate.release(1)
                return (try await connection.response(), try await connection.response())
            }
            let large = try await ask(twins.plainPort, "/large/11")
            #expect(first?.without(["date"]) == large.without(["date"]), "the miss's answer comes first")
            #expect(second?.without(["date"]) == thumbnail.without(["date"]))

            // A hit, then a miss held at the gate: the lane answers the hit at once, the router the miss.
            let answered = twins.lane.answered
            let (hit, miss) = try await RawHTTPConnection.with(port: twins.lanePort) { connection in
                try await connection.send(["/thumbs/5", "/large/13"])
                let hit = try await connection.response()
                gate.release(1)
                return (hit, try await connection.response())
            }
            #expect(twins.lane.answered == answered + 1)
            #expect(hit?.without(["date"]) == thumbnail.without(["date"]))
            let large13 = try await ask(twins.plainPort, "/large/13")
            #expect(miss?.without(["date"]) == large13.without(["date"]))
        }
    }

    @Test func keepAliveAndConnectionCloseBehaveAsWithoutTheLane() async throws {
        try await withTwins { twins in
            _ = try await ask(twins.plainPort, "/thumbs/5")
            for port in [twins.lanePort, twins.plainPort] {
                let statuses = try await RawHTTPConnection.with(port: port) { connection in
                    var statuses: [Int?] = []
                    for _ in 0..<3 {
                        try await connection.send(["/thumbs/5"])
                        statuses.append(try await connection.response()?.status)
                    }
                    // HEADs (a hit, and an error page passed on) leave no body behind on the
                    // connection: the next answer reads whole.
                    for path in ["/thumbs/5", "/thumbs/9999"] {
                        try await connection.send([path], method: "HEAD")
                        statuses.append(try await connection.response(head: true)?.status)
                    }
                    try await connection.send(["/thumbs/5"])
                    statuses.append(try await connection.response()?.status)
                    return statuses
                }
                #expect(statuses == [200, 200, 200, 200, 404, 200], "one connection, six answers")
                // Connection: close: its answer, then the end of the connection; nothing for a
                // request pipelined after it.
                let (status, after) = try await RawHTTPConnection.with(port: port) { connection in
                    try await connection.send("GET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1\nConnection: close\n\nGET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1\n\n")
                    return (try await connection.response()?.status, try await connection.closed())
                }
                #expect(status == 200 && after.isEmpty, "port \(port == twins.lanePort ? "with" : "without") the lane")
            }
        }
    }

    /// The idle time-out over real sockets, with and without the lane: an answered connection
    /// that then goes quiet is closed by the server. (When it is not closed, FastLaneHandlerTests
    /// shows on the embedded loop's clock: a busy connection, an answer still owed.)
    @Test("Real-time smoke test: an idle connection is closed, with and without the lane")
    func anIdleConnectionIsClosedWithAndWithoutTheLane() async throws {
        try await withTwins(idleTimeout: .seconds(1)) { twins in
            _ = try await ask(twins.plainPort, "/thumbs/5")
            for port in [twins.lanePort, twins.plainPort] {
                let lane = port == twins.lanePort ? "with the lane" : "without the lane"
                let answered = twins.lane.answered
                try await RawHTTPConnection.with(port: port) { connection in
                    try await connection.send(["/thumbs/5"])
                    #expect(try await connection.response()?.status == 200, "\(lane)")
                    // Then idle: the server closes it (`closed()` waits for the end, nothing else).
                    #expect(try await connection.closed().isEmpty, "\(lane)")
                }
                #expect(twins.lane.answered == answered + (port == twins.lanePort ? 1 : 0), "\(lane)")
            }
        }
    }

    /// The app and the gallery as they are built close a connection that sends half a request
    /// head and then nothing (a slow client holding connections): with the lane and without.
    /// A real-time smoke test: the servers' idle timers run on their event loops' clocks. Its
    /// bound is the suite's time limit: a one-minute limit of its own, counted from the start of
    /// a full parallel run, was spent once on CI rendering the gallery before a byte was sent.
    @Test("Real-time smoke test: the built servers close a connection that never finishes its head", arguments: [true, false])
    func theBuiltServersCloseAConnectionThatNeverFinishesItsHead(fastLane: Bool) async throws {
        func closesHalfAHead(_ port: Int) async throws -> Bool {
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET / HTTP/1.1\nHost: 127.0.0.1\nX-Slow: ")
                return try await connection.closed().isEmpty
            }
        }
        var galleryConfiguration = GalleryConfiguration(port: 0, signingKey: testGalleryKey, fastLane: fastLane)
        galleryConfiguration.idleTimeout = .seconds(1)
        try await withLiveServer({ try await Gallery.buildApplication(galleryConfiguration, onServerRunning: $0) }) { galleryPort in
            #expect(try await closesHalfAHead(galleryPort), "the gallery, fast lane \(fastLane)")
            let directory = TemporaryDirectory()
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            var configuration = AppConfiguration(
                port: 0, galleryURL: URL(string: "http://127.0.0.1:\(galleryPort)")!, trust: testGalleryTrust, fastLane: fastLane
            )
            #expect(configuration.idleTimeout == .seconds(75), "on by default")
            configuration.idleTimeout = .seconds(1)
            try await withLiveServer({ running in
                try await EmojiArtApp.buildApplication(configuration, pipeline: pipeline, onServerRunning: running)
            }) { (port: Int) async throws in
                let closed = try await closesHalfAHead(port)
                #expect(closed, "the app, fast lane \(fastLane)")
            }
        }
    }

    @Test func aClientThatReadsLateGetsEveryAnswerInOrder() async throws {
        try await withTwins { twins in
            let single = try await ask(twins.plainPort, "/large/5")
            let count = 200
            let before = twins.lane.answered
            let answers = try await RawHTTPConnection.with(port: twins.lanePort) { connection in
                try await connection.send(Array(repeating: "/large/5", count: count) + ["/thumbs/9999"])
                var answers: [RawHTTPResponse] = []
                for _ in 0...count { answers.append(try #require(try await connection.response())) }
                return answers
            }
            #expect(answers.dropLast().allSatisfy { $0.without(["date"]) == single.without(["date"]) })
            #expect(answers.last?.status == 404)
            let byLane = twins.lane.answered - before
            // The lane answers while the connection takes more output; then it passes requests on
            // and Hummingbird's back-pressure holds the rest.
            #expect(byLane >= 1 && byLane < count, "\(byLane) of \(count) answered by the lane")
        }
    }

    @Test(arguments: [true, false])
    func gracefulShutdownClosesAnIdleConnection(withLane: Bool) async throws {
        try await withGallery { galleryURL, pipeline in
            let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
            let model = makeModel(galleryURL, pipeline)
            let (router, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: model, pipeline: pipeline)
            await model.loadAndVerify()
            let lane = FastLane(serverName: "EmojiArt", respond: ImageController<BasicRequestContext>(services: services).fastLane)
            let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
            let app = Application(
                responder: router.buildResponder(), server: .http1(fastLane: withLane ? lane : nil),
                configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "EmojiArt"),
                onServerRunning: { portContinuation.yield($0.localAddress?.port ?? 0) }
            )
            let group = ServiceGroup(configuration: .init(services: [app], logger: .init(label: "test")))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                var iterator = ports.makeAsyncIterator()
                let port = try #require(await iterator.next())
                try await RawHTTPConnection.with(port: port) { connection in
                    for _ in 0..<2 {
                        try await connection.send(["/thumbs/5"])
                        #expect(try await connection.response()?.status == 200)
                    }
                    #expect(lane.answered == (withLane ? 1 : 0))
                    await group.triggerGracefulShutdown()
                    #expect(try await connection.closed().isEmpty, "the idle connection is closed")
                }
                try await tasks.waitForAll()  // and the server stops
            }
        }
    }

    /// A prepared answer is sent only for the bytes memory holds: other bytes under the same
    /// variant (made again, or loaded again) get an answer of their own. It lives in memory with
    /// those bytes, and its body is their buffer, not a copy.
    @Test func anAnswerIsAlwaysMemorysBytes() async throws {
        try await withGallery { galleryURL, pipeline in
            let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
            let model = makeModel(galleryURL, pipeline)
            let (_, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: model, pipeline: pipeline)
            await model.loadAndVerify()
            func answer(_ bytes: [UInt8]) throws -> FastLane.Answer {
                guard case let .load(plan) = services.plan(.init(route: .thumbs, density: 1, format: .png), piece: 5, version: nil) else {
                    throw PlanMissing()
                }
                return services.answer(plan, image: Image(data: bytes, contentType: "image/png", originalSHA256: "s"), ifNoneMatch: nil)
            }
            let first = try answer([1, 2, 3])
            #expect(first.body == ByteBuffer(bytes: [1, 2, 3]))
            // The same size and original, other bytes: still the bytes answered.
            #expect(try answer([4, 5, 6]).body == ByteBuffer(bytes: [4, 5, 6]))
            #expect(try answer([4, 5, 6, 7]).headerFields[.contentLength] == "4")
            // Memory's image: its answer is kept with it, and its body is memory's buffer.
            guard case let .load(plan) = services.plan(.init(route: .thumbs, density: 1, format: .png), piece: 5, version: nil) else {
                throw PlanMissing()
            }
            let key = plan.request.cacheKey
            pipeline.memory.insert(Image(data: [9, 9, 9, 9], contentType: "image/png", originalSHA256: "s"), forKey: key)
            let held = try #require(pipeline.memory.peek(key))
            let answered = services.answer(plan, image: held, ifNoneMatch: nil)
            let kept = try #require(pipeline.memory.peek(key)?.attachment as? PreparedAnswer)
            #expect(kept.etag == answered.headerFields[.eTag])
            #expect(answered.body.withUnsafeReadableBytes { $0.baseAddress } == held.withUnsafeBytes { $0.baseAddress }, "no copy")
            // Answered again: the prepared answer, not one made again.
            let again = try #require(pipeline.memory.peek(key))
            #expect(again.attachment === kept)
            #expect(services.answer(plan, image: again, ifNoneMatch: nil).headerFields == answered.headerFields)
        }
    }
}

private struct PlanMissing: Error {}
