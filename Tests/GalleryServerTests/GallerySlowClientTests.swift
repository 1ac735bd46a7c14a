import FastLane
import Foundation
import GalleryServer
import NIOCore
import Testing
import TestSupport

/// Slow and greedy clients against the gallery's real server, with the fast lane and without
/// (issue 40, finding 4): before, a request trickled one byte at a time kept its connection open
/// without end, a body was read and dropped, and connections were never capped. The idle
/// time-out is an hour here: only the deadline under test may close a connection.
@Suite(.timeLimit(.minutes(2))) struct GallerySlowClientTests {
    /// The gallery as `emojiart gallery` builds it (``Gallery/buildApplication(_:logger:onServerRunning:)``),
    /// with what `configure` sets.
    func withGallery(fastLane: Bool, configure: (inout GalleryConfiguration) -> Void = { _ in }, _ body: (_ port: Int) async throws -> Void) async throws {
        var configuration = GalleryConfiguration(port: 0, fastLane: fastLane)
        configuration.idleTimeout = .seconds(3600)
        configure(&configuration)
        try await withLiveServer({ [configuration] in try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            try await body(port)
        }
    }

    /// The gallery's count of connections cut for `reason`, read from its `/metrics`.
    func connectionsCut(_ port: Int, _ reason: ConnectionGuard.Cut) async throws -> Int {
        try await RawHTTPConnection.with(port: port) { connection in
            try await connection.send(["/metrics"])
            let text = String(decoding: try #require(try await connection.response()).body, as: UTF8.self)
            let line = text.split(separator: "\n").first { $0.hasPrefix("gallery_connections_cut_total{reason=\"\(reason.rawValue)\"}") }
            return Int(line?.split(separator: " ").last ?? "0") ?? -1
        }
    }

    /// A head trickled a byte every 0.1 s is cut off at the request's deadline, with nothing
    /// answered, and counted.
    @Test(arguments: [true, false])
    func aTrickledRequestIsCutOffAtItsDeadline(fastLane: Bool) async throws {
        try await withGallery(fastLane: fastLane, configure: { $0.requestTimeout = .seconds(1) }) { port in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /gallery/image?3 HTTP/1.1\nHost: 127.0.0.1\n")
                let trickle = Task { await connection.trickle("X-Slow: " + String(repeating: "a", count: 10_000)) }
                defer { trickle.cancel() }
                #expect(try await connection.cutOff()?.isEmpty ?? true, "the server answered a request it never received whole")
            }
            #expect(try await connectionsCut(port, .requestTimeout) == 1)
        }
    }

    /// A body on a `GET` (no route of the gallery takes one) is answered 413 after the request
    /// before it, and the connection ends then: the trickled body is never read.
    @Test(arguments: [true, false])
    func aBodyIsAnswered413AndEndsTheConnection(fastLane: Bool) async throws {
        try await withGallery(fastLane: fastLane) { port in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send(["/gallery/image?3"])
                #expect(try await connection.response()?.status == 200)
                try await connection.send(["/gallery/image?3", "/health"], fields: ["Content-Length: 100000"])
                let trickle = Task { await connection.trickle(String(repeating: "a", count: 10_000)) }
                defer { trickle.cancel() }
                let refused = try #require(try await connection.response())
                #expect(refused.status == 413)
                #expect(refused["connection"] == "close")
                #expect(try await connection.closed().isEmpty, "a request after the body was read")
            }
            #expect(try await connectionsCut(port, .body) == 1)
        }
    }

    /// With `--max-connections 3`, a fourth connection is closed as soon as it is accepted and
    /// counted, while the three open go on being answered.
    @Test(arguments: [true, false])
    func pastMaxConnectionsANewOneIsClosedAtOnce(fastLane: Bool) async throws {
        try await withGallery(fastLane: fastLane, configure: { $0.maxConnections = 3 }) { port in
            let cap = try await RawHTTPConnection.pastACapOfThree(port: port, path: "/gallery/image?1")
            #expect(cap.before == [200, 200, 200] && cap.after == [200, 200, 200], "\(cap.before) \(cap.after)")
            #expect(cap.fourth.isEmpty, "a fourth connection was served")
            #expect(cap.metrics?.contains("gallery_connections_cut_total{reason=\"over_limit\"} 1") == true, "\(cap.metrics ?? "no metrics")")
        }
    }
}
