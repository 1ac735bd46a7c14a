import FastLane
import Hummingbird
import NIOCore
import Testing
import TestSupport

/// What a lane's responder leaves for a route (`FastLane.Request.handoff`) reaches the route of
/// that very request, over real connections: never another request's, never across connections.
@Suite(.timeLimit(.minutes(3))) struct HandoffTests {
    /// A server whose lane answers `/hit`, leaves "N" for `/handed/N` and passes it on, and
    /// leaves nothing for anything else; every route answers with the handoff it reads.
    /// `/later/N` starts a task that reads the handoff once `later` opens, and yields it to `read`.
    func withServer(
        later: Gate = Gate(), read: AsyncStream<String>.Continuation? = nil, _ body: (Int) async throws -> Void
    ) async throws {
        let lane = FastLane(serverName: "Test") { request in
            if request.target == "/hit" { return FastLane.Answer(status: .ok, headerFields: [:], body: ByteBuffer(string: "lane")) }
            if request.target.hasPrefix("/handed/") { request.handoff = String(request.target.dropFirst(8)) }
            if request.target.hasPrefix("/later/") { request.handoff = "later-" + request.target.dropFirst(7) }
            return nil
        }
        let router = Router()
        router.get("later/:n") { _, _ -> String in
            Task {
                try await later.pass()
                read?.yield(FastLane.handoff.map { "\($0)" } ?? "none")
            }
            return "started"
        }
        let echo: @Sendable (Request, BasicRequestContext) async throws -> String = { _, _ in
            FastLane.handoff.map { "\($0)" } ?? "none"
        }
        router.get("handed/:n", use: echo)
        router.post("handed/:n", use: echo)
        router.get("hit", use: echo)
        router.get("other", use: echo)
        try await withLiveServer({ running in
            Application(
                router: router, server: .http1(fastLane: lane),
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await running($0.localAddress?.port ?? 0) }
            )
        }) { port in try await body(port) }
    }

    func body(_ response: RawHTTPResponse?) -> String {
        response.map { String(decoding: $0.body, as: UTF8.self) } ?? "(no answer)"
    }

    @Test func eachRouteReadsItsOwnRequestsHandoff() async throws {
        try await withServer { port in
            try await RawHTTPConnection.with(port: port) { connection in
                var bodies: [String] = []
                // One request at a time: the lane sees each.
                for path in ["/handed/1", "/hit", "/other", "/handed/2"] {
                    try await connection.send([path])
                    bodies.append(body(try await connection.response()))
                }
                // Not for the lane (a POST): passed on without asking, so nothing is handed.
                try await connection.send(["/handed/3"], method: "POST", fields: ["Content-Length: 0"])
                bodies.append(body(try await connection.response()))
                // Pipelined: behind a request passed on, the lane asks nothing of the next.
                try await connection.send(["/handed/4", "/handed/5", "/hit"])
                for _ in 0..<3 { bodies.append(body(try await connection.response())) }
                try await connection.send(["/handed/6"])
                bodies.append(body(try await connection.response()))
                #expect(bodies == ["1", "lane", "none", "2", "none", "4", "none", "none", "6"])
            }
        }
    }

    @Test func aTaskARouteStartsKeepsItsOwnRequestsHandoff() async throws {
        let later = Gate()
        let (reads, read) = AsyncStream.makeStream(of: String.self)
        try await withServer(later: later, read: read) { port in
            try await RawHTTPConnection.with(port: port) { connection in
                for path in ["/later/1", "/handed/2"] {
                    try await connection.send([path])
                    _ = try await connection.response()
                }
            }
            // The task reads after request 2 was answered on the same connection.
            later.open()
            var iterator = reads.makeAsyncIterator()
            #expect(await iterator.next() == "later-1")
        }
    }

    @Test func handoffsStayOnTheirConnection() async throws {
        try await withServer { port in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<4 {
                    group.addTask {
                        try await RawHTTPConnection.with(port: port) { connection in
                            for request in 0..<10 {
                                let path = request % 3 == 2 ? "/other" : "/handed/\(client)-\(request)"
                                try await connection.send([path])
                                #expect(body(try await connection.response()) == (request % 3 == 2 ? "none" : "\(client)-\(request)"))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test func withoutALaneNothingIsHanded() async throws {
        let router = Router()
        router.get("handed/:n") { _, _ in FastLane.handoff.map { "\($0)" } ?? "none" }
        try await withLiveServer({ running in
            Application(
                router: router, server: .http1(fastLane: nil),
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await running($0.localAddress?.port ?? 0) }
            )
        }) { port in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send(["/handed/1"])
                #expect(body(try await connection.response()) == "none")
            }
        }
    }
}
