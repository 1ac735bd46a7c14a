@testable import EmojiArtApp
import FastLane
import Foundation
@testable import GalleryServer
import Hummingbird
import HTTPTypes
import ImageCache
import ImageService
import NIOCore
import Testing
import TestSupport

/// The edge's and the shield's allow-list (`EdgeConfiguration.edgeRoutes`, `shieldRoutes`), one
/// spelling per route through real nginx, and the edge's limits on slow and greedy clients
/// (issue 40, findings 3 and 5).
@Suite(.serialized, .timeLimit(.minutes(3))) struct EdgeRouteTests {
    /// A request's status and whether nginx wrote the answer itself (its own error page).
    static func ask(
        _ port: Int, _ target: String, method: String = "GET", fields: [String] = ["Host: localhost"]
    ) async throws -> (status: Int?, byNginx: Bool) {
        try await RawHTTPConnection.with(port: port) { connection in
            try await connection.send([target], method: method, fields: fields)
            let answer = try await connection.response(head: method == "HEAD")
            return (answer?.status, String(decoding: answer?.body ?? [], as: UTF8.self).contains("<hr><center>nginx"))
        }
    }

    /// Paths that are another spelling of a route (or of none), each answered 404 by nginx itself.
    static let edgeMisspellings = [
        "/stats/", "//stats", "/metrics/.", "/metrics/", "/a/../stats", "/st%61ts", "/events/", "//events", "/events/.",
        "/thumbs//5", "/thumbs/05", "/thumbs/5/", "/pieces/5/", "/pieces/05", "/health/", "//", "/./", "/assets/app.css/",
        "/nothing", "/stats", "/metrics",
    ]

    @Test func theEdgeAndTheShieldPassOnTheirRoutesInOneSpellingOnlyAndTheLimitsHold() async throws {
        let cluster = try await RunningCluster(["--instances", "1"])
        do {
            try await cluster.waitUntilEveryInstanceIsReady()
            let edgePort = try #require(URL(string: cluster.edge)?.port)
            let shieldPort = try #require(URL(string: cluster.shield)?.port)
            // Every route of the list reaches the instance in its one spelling.
            for path in ["/", "/health", "/assets/app.css", "/assets/app.js", "/pieces/5", "/thumbs/5", "/large/2x/5", "/health?x=1"] {
                let answer = try await Self.ask(edgePort, path)
                #expect(answer.status == 200 && !answer.byNginx, "\(path): \(answer)")
            }
            // Any other spelling, or a path not listed, is nginx's own 404: no instance sees it.
            for path in Self.edgeMisspellings {
                let answer = try await Self.ask(edgePort, path)
                #expect(answer.status == 404 && answer.byNginx, "\(path): \(answer)")
            }

            // The per-client stream limit holds for every spelling: with 16 streams open, the
            // route's own spelling (a query of its own included) is 429, any other 404.
            let over = try await ClusterTests.holdingEventStreams(16, edgePort: edgePort) {
                var statuses: [Int?] = []
                for path in ["/events", "/events?x=1", "/events/", "//events", "/x/../events"] {
                    statuses.append(try await Self.ask(edgePort, path).status)
                }
                return statuses
            }
            #expect(over.held == Array(repeating: 200, count: 16) && over.next == [429, 429, 404, 404, 404], "\(over)")

            // The actions' rate holds for every spelling: past the burst, the route (a query of its
            // own included) is 429; any other spelling is 404, never passed on unlimited.
            var retries: [Int?] = []
            for _ in 0..<10 { retries.append(try await Self.ask(edgePort, "/retry", method: "POST").status) }
            #expect(retries.first == 303 && retries.contains(429), "\(retries)")
            for path in ["/retry/", "//retry", "/retry/.", "/a/../retry"] {
                let answer = try await Self.ask(edgePort, path, method: "POST")
                #expect(answer.status == 404 && answer.byNginx, "POST \(path): \(answer)")
            }
            var queried: [Int?] = []
            for _ in 0..<10 { queried.append(try await Self.ask(edgePort, "/retry?x=1", method: "POST").status) }
            #expect(queried.contains(429), "\(queried)")
            // No route takes a body: a larger one is refused by the edge itself (413).
            let large = try await RawHTTPConnection.with(port: edgePort) { connection in
                try await connection.send("POST /cache/clear-disk HTTP/1.1\nHost: localhost\nContent-Length: 4096\n\n" + String(repeating: "x", count: 4096))
                return try await connection.response()?.status
            }
            #expect(large == 413)

            // The shield passes on what the instances ask for, in its one spelling; anything else
            // is its own 404 (the gallery's test routes and metrics included).
            for path in ["/gallery/images", "/gallery/image?5", "/gallery/key", "/health"] {
                let answer = try await Self.ask(shieldPort, path, fields: [])
                #expect(answer.status == 200 && !answer.byNginx, "shield \(path): \(answer)")
            }
            for path in [
                "/gallery/images/", "//gallery/images", "/gallery/./images", "/gallery/x/../images", "/gallery/image/?5",
                "/gallery/image?05", "/gallery/image?5&x=1", "/gallery//image?5", "/gallery/key/", "/metrics", "/gallery/test/gate", "/",
            ] {
                let answer = try await Self.ask(shieldPort, path, fields: [])
                #expect(answer.status == 404 && answer.byNginx, "shield \(path): \(answer)")
            }
        } catch {
            try await cluster.stop()
            throw error
        }
        try await cluster.stop()
    }

    /// Runs the edge alone (real nginx, the template's configuration with `workers` workers of
    /// `workerConnections` connections) in front of one stand-in instance that answers
    /// `GET /health`, and `GET /events` with the client the edge named (`EmojiArt-Client-Address`),
    /// and hands `body` the edge's port.
    static func withEdge(workers: Int, workerConnections: Int, _ body: (_ edgePort: Int) async throws -> Void) async throws {
        try await withEdge(workers: workers, workerConnections: workerConnections) { edgePort, _ in try await body(edgePort) }
    }

    /// ``withEdge(workers:workerConnections:_:)``, handing `body` nginx's error log too.
    static func withEdge(
        workers: Int, workerConnections: Int, _ body: (_ edgePort: Int, _ errorLog: URL) async throws -> Void
    ) async throws {
        let nginx = try #require(["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.isExecutableFile), "nginx is not installed")
        let router = Router()
        router.get("health") { _, _ in "ok" }
        router.get("events") { request, _ in request.headers[HTTPField.Name("EmojiArt-Client-Address")!] ?? "none" }
        try await withLiveServer({ running in
            Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await running($0.localAddress?.port ?? 0) }
            )
        }) { instancePort in
            let work = TemporaryDirectory("emojiart-edge")
            try FileManager.default.createDirectory(at: work.url.appendingPathComponent("cache/temp"), withIntermediateDirectories: true)
            let edge = try EdgeConfiguration(
                instancePorts: [instancePort], galleryPort: instancePort, edgePort: LoopbackPort.free(), shieldPort: LoopbackPort.free(),
                cacheDirectory: work.url.path + "/cache"
            )
            let conf = work.url.appendingPathComponent("nginx.conf")
            try edge.nginxConf(prefix: work.url.path, workers: workers, workerConnections: workerConnections)
                .write(to: conf, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: nginx)
            process.arguments = ["-p", work.url.path, "-c", conf.path, "-g", "daemon off;"]
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer {
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
                withExtendedLifetime(work) {}  // its directory goes once nginx has stopped
            }
            // Up once it answers (it has no other way to say so): a refused connection is tried again.
            var up = false
            while !up, process.isRunning {
                up = (try? await ask(edge.edgePort, "/health"))?.status == 200
                await Task.yield()
            }
            try #require(up, "nginx did not start: \((try? String(contentsOf: work.url.appendingPathComponent("error.log"), encoding: .utf8)) ?? "")")
            try await body(edge.edgePort, work.url.appendingPathComponent("error.log"))
        }
    }

    /// Opens `count` connections to `port`, sends each half a request head (nginx may close one
    /// at once: then the write fails, and that is all), and runs `body` while all are open.
    static func holdingHalfHeads<T: Sendable>(
        _ count: Int, port: Int, held: [RawHTTPConnection] = [], _ body: ([RawHTTPConnection]) async throws -> T
    ) async throws -> T {
        guard held.count < count else { return try await body(held) }
        return try await RawHTTPConnection.with(port: port) { connection in
            try? await connection.send("GET /health HTTP/1.1\nHost: localhost\nX-Held: ")
            return try await holdingHalfHeads(count, port: port, held: held + [connection], body)
        }
    }

    /// Finding 5: half-sent requests from one address held every worker connection for nginx's 60 s
    /// header time-out, and `/health` failed for everyone. With more of them than the edge's
    /// workers times its worker connections, another client is refused while they are held (the
    /// test holds enough), they are cut off at the header time-out (10 s), and a client at
    /// another address then gets `/health`. Small numbers keep it cheap; the test's one-minute time
    /// limit is generous (the time-out plus 2 s is what it takes), and nginx's default 60 s, with the
    /// set-up, exceeds it.
    @Test(.timeLimit(.minutes(1))) func halfSentRequestsFromOneAddressAreCutOffAndAnotherClientGetsHealth() async throws {
        let workers = 1, connections = 32
        try await Self.withEdge(workers: workers, workerConnections: connections) { edgePort in
            try await Self.holdingHalfHeads(2 * workers * connections, port: edgePort) { held in
                // Every worker connection is taken: nginx closes a new one at once, unanswered.
                // (Closed before the request is written, the write fails: nil too.)
                let refused = try? await RawHTTPConnection.with(port: edgePort, from: "127.0.0.2") { connection in
                    try await connection.send(["/health"], fields: ["Host: localhost"])
                    return try await connection.response()
                }
                #expect(refused == nil, "the held requests took every worker connection: \(String(describing: refused))")

                // nginx cuts each one off (the ones over its connections at once, the rest at the
                // header time-out); then a client at another address is answered. The test's time
                // limit (one minute) is under nginx's default 60 s header time-out with the set-up.
                for connection in held { _ = try? await connection.closed() }
                let answer = try await RawHTTPConnection.with(port: edgePort, from: "127.0.0.2") { connection in
                    try await connection.send(["/health"], fields: ["Host: localhost"])
                    return try await connection.response()
                }
                #expect(answer?.status == 200 && answer?.body == Array("ok".utf8), "\(String(describing: answer))")
            }
        }
    }

    /// Opens `count` connections to `port`, each with a request whose body nginx is waiting
    /// for (it has read the head, counted the request and said `100 Continue`), and runs `body`
    /// while all are open.
    static func holdingBodies<T: Sendable>(
        _ count: Int, port: Int, held: [Int?] = [], _ body: ([Int?]) async throws -> T
    ) async throws -> T {
        guard held.count < count else { return try await body(held) }
        return try await RawHTTPConnection.with(port: port) { connection in
            try await connection.send("POST / HTTP/1.1\nHost: localhost\nContent-Length: 10\nExpect: 100-continue\n\n")
            let status = try await connection.response()?.status
            return try await holdingBodies(count, port: port, held: held + [status], body)
        }
    }

    /// One client address may have `requestsPerClient` requests in progress at the edge: a
    /// request counts once its head is read, so bodies it never sends hold its places, not
    /// another address's.
    @Test func oneAddressHasAtMostItsRequestsInProgress() async throws {
        try await Self.withEdge(workers: 1, workerConnections: 1024) { edgePort in
            let limit = EdgeConfiguration.requestsPerClient
            let (held, next, other) = try await Self.holdingBodies(limit, port: edgePort) { held in
                (held, try await Self.ask(edgePort, "/health").status, try await RawHTTPConnection.with(port: edgePort, from: "127.0.0.2") { connection in
                    try await connection.send(["/health"], fields: ["Host: localhost"])
                    return try await connection.response()?.status
                })
            }
            #expect(held == Array(repeating: 100, count: limit), "each held request was read and counted: \(held)")
            #expect(next == 429 && other == 200)
        }
    }

    /// Every route the app's and the gallery's routers have is on the edge's or the shield's
    /// list, or named as kept off both (`/stats`, `/metrics`): a new route must be placed.
    @Test func everyRouteOfTheServersIsListedOrKeptOffOnPurpose() async throws {
        let directory = TemporaryDirectory()
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false, fetcher: EmojiArtModel.galleryFetcher()))
        let galleryURL = URL(string: "http://127.0.0.1:1")!
        // With the image service, whose routes the edge lists under its prefix.
        var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
        let service = ImageServiceConfiguration(
            signing: .unsignedAllowed, sources: SourcePolicy(allowedSources: ["https://images.example.com/"]), pathPrefix: EdgeConfiguration.imageServicePrefix
        )
        configuration.imageService = try ImageServer(configuration: service, pipeline: ImageServer.makePipeline(service, diskDirectory: nil))
        let app = try EmojiArtApp.buildRouter(configuration, model: makeModel(galleryURL, pipeline), pipeline: pipeline)
        /// A route's path with each parameter (`{piece}`) as piece 5.
        func example(_ path: String) -> String {
            "/" + path.split(separator: "/").map { $0.hasPrefix("{") || $0.hasPrefix(":") ? "5" : String($0) }.joined(separator: "/")
        }
        let appPaths = Set(app.routes.map { example($0.path.description) })
        #expect(appPaths.isSuperset(of: ["/", "/thumbs/5", "/large/2x/5", "/events", "/retry", "/stats", "/health"]), "\(appPaths)")
        for path in appPaths where !EdgeConfiguration.privateRoutes.contains(path) {
            #expect(EdgeConfiguration.edgeRoutes.contains { $0.matches(path) }, "the app's \(path) is not on the edge's list")
        }
        let galleryConfiguration = GalleryConfiguration(port: 0)
        let publication = try Publication(art: try await ArtStore.load(galleryConfiguration.catalog), seed: galleryConfiguration.seed, now: galleryConfiguration.now)
        let gallery = try Gallery.buildRouter(galleryConfiguration, publication: publication, metrics: GalleryMetrics(catalog: galleryConfiguration.catalog))
        let galleryPaths = Set(gallery.routes.map { example($0.path.description) })
        #expect(galleryPaths.isSuperset(of: ["/gallery/images", "/gallery/image", "/gallery/key", "/metrics"]), "\(galleryPaths)")
        for path in galleryPaths where !EdgeConfiguration.privateRoutes.contains(path) {
            #expect(EdgeConfiguration.shieldRoutes.contains { $0.matches(path) }, "the gallery's \(path) is not on the shield's list")
        }
        // And nothing is listed that no server has.
        for route in EdgeConfiguration.edgeRoutes {
            #expect(appPaths.contains { route.matches($0) }, "\(route) is no route of the app")
        }
    }

    /// The edge's rule for a misspelt request (PCRE on `$request_uri`) says what the servers' own
    /// rule (`FastLane.hasOneSpelling`) says, target by target.
    @Test(arguments: [
        "/", "/stats", "/stats/", "//stats", "/metrics/.", "/metrics/..", "/a/../stats", "/./stats", "/.", "/..", "/...", "/a.b/.c",
        "/thumbs/2x/5?v=0123456789abcdef", "/stats/?x", "/stats?x/", "/stats?a//b/../%2e", "/st%61ts", "/thumbs//5", "//",
        "/events/", "/events/.?x", "/gallery/image?5", "/gallery/image/?5", "/a/b/c/", "/a..", "/..a/b",
    ])
    func theEdgesSpellingRuleIsTheServers(target: String) {
        let misspelt = EdgeConfiguration.misspeltRequest.contains { target.range(of: $0, options: .regularExpression) != nil }
        #expect(misspelt == !FastLane.hasOneSpelling(target), "\(target)")
    }

    /// The same, for every target of up to six characters after its `/` made of the characters
    /// that matter (`/`, `.`, `%`, `?`, `#` and a letter), against the rule as RFC 3986 words it:
    /// the path's segments (up to `?` or `#`) none empty (but the root's), `.` or `..`, and no
    /// percent-encoding.
    @Test func theSpellingRulesAgreeOnEveryShortTarget() throws {
        let patterns = try EdgeConfiguration.misspeltRequest.map { try NSRegularExpression(pattern: $0) }
        var targets = ["/"]
        var last = [""]
        for _ in 1...6 {
            last = last.flatMap { prefix in ["/", ".", "%", "?", "#", "a"].map { prefix + $0 } }
            targets += last.map { "/" + $0 }
        }
        var disagreements: [String] = []
        for target in targets {
            let path = target.prefix { $0 != "?" && $0 != "#" }
            let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
            let oneSpelling = !path.contains("%") && (path == "/" || segments.allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." })
            let range = NSRange(target.startIndex..., in: target)
            let misspelt = patterns.contains { $0.firstMatch(in: target, range: range) != nil }
            if FastLane.hasOneSpelling(target) != oneSpelling || misspelt == oneSpelling { disagreements.append(target) }
        }
        #expect(targets.count == 55_987 && disagreements.isEmpty, "\(disagreements.prefix(20))")
    }
}
