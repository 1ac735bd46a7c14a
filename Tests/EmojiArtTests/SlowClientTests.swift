@testable import EmojiArtApp
import FastLane
import Foundation
import Hummingbird
import ImageCache
import NIOCore
import Testing
import TestSupport

/// Slow and greedy clients against the app's real server, with the fast lane and without (issue
/// 40, finding 4): before, a request trickled one byte every 2 s kept its connection open without
/// end (its bytes counted as activity), a client that stopped reading an event stream held it, a
/// body was read and dropped, and 300 such connections took every descriptor of an app allowed
/// 256. The idle time-out is an hour here: only the deadline under test may close a connection.
@Suite(.timeLimit(.minutes(2))) struct SlowClientTests {
    /// The app as `emojiart app` builds it (``EmojiArtApp/buildApplication(_:pipeline:logger:onServerRunning:)``)
    /// against a real gallery, with what `configure` sets.
    func withApp(fastLane: Bool, configure: (inout AppConfiguration) -> Void = { _ in }, _ body: (_ port: Int) async throws -> Void) async throws {
        try await withGallery { galleryURL, pipeline in
            var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust, fastLane: fastLane)
            configuration.idleTimeout = .seconds(3600)
            configure(&configuration)
            try await withLiveServer({ try await EmojiArtApp.buildApplication(configuration, pipeline: pipeline, onServerRunning: $0) }) { port in
                try await body(port)
            }
        }
    }

    /// The app's count of connections cut for `reason`, read from its `/metrics`.
    func connectionsCut(_ port: Int, _ reason: ConnectionGuard.Cut) async throws -> Int {
        try await RawHTTPConnection.with(port: port) { connection in
            try await connection.send(["/metrics"])
            let text = String(decoding: try #require(try await connection.response()).body, as: UTF8.self)
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("emojiart_connections_cut_total{reason=\"\(reason.rawValue)\"}") })
            return try #require(Int(line.split(separator: " ").last ?? ""))
        }
    }

    /// A head trickled a byte every 0.1 s (each byte well within the idle time-out) is cut off at
    /// the request's deadline, with nothing answered, and counted.
    @Test(arguments: [true, false])
    func aTrickledRequestIsCutOffAtItsDeadline(fastLane: Bool) async throws {
        try await withApp(fastLane: fastLane, configure: { $0.requestTimeout = .seconds(1) }) { port in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /health HTTP/1.1\nHost: 127.0.0.1\n")
                let trickle = Task { await connection.trickle("X-Slow: " + String(repeating: "a", count: 10_000)) }
                defer { trickle.cancel() }
                #expect(try await connection.cutOff()?.isEmpty ?? true, "the server answered a request it never received whole")
            }
            #expect(try await connectionsCut(port, .requestTimeout) == 1)
        }
    }

    /// A body, on a `GET` or on one of the app's `POST`s (no route takes one), is answered 413 in
    /// its turn, after the request before it, and the connection ends then: the body, trickled
    /// or not, is never read.
    @Test(arguments: [true, false], [
        "GET /health HTTP/1.1\nHost: 127.0.0.1\nContent-Length: 100000\n\n",
        "POST /retry HTTP/1.1\nHost: 127.0.0.1\nTransfer-Encoding: chunked\n\n",
    ])
    func aBodyIsAnswered413AndEndsTheConnection(fastLane: Bool, head: String) async throws {
        try await withApp(fastLane: fastLane) { port in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /health HTTP/1.1\nHost: 127.0.0.1\n\n" + head)
                let trickle = Task { await connection.trickle(String(repeating: "a", count: 10_000)) }
                defer { trickle.cancel() }
                #expect(try await connection.response()?.status == 200)
                let refused = try #require(try await connection.response())
                #expect(refused.status == 413)
                #expect(refused["connection"] == "close")
                #expect(String(decoding: refused.body, as: UTF8.self).contains("takes no request body"))
                #expect(try await connection.closed().isEmpty)
            }
            #expect(try await connectionsCut(port, .body) == 1)
        }
    }

    /// With `--max-connections 3`, a fourth connection is closed as soon as it is accepted and
    /// counted, while the three open go on being answered.
    @Test(arguments: [true, false])
    func pastMaxConnectionsANewOneIsClosedAtOnce(fastLane: Bool) async throws {
        try await withApp(fastLane: fastLane, configure: { $0.maxConnections = 3 }) { port in
            let cap = try await RawHTTPConnection.pastACapOfThree(port: port, path: "/health")
            #expect(cap.before == [200, 200, 200] && cap.after == [200, 200, 200], "\(cap.before) \(cap.after)")
            #expect(cap.fourth.isEmpty, "a fourth connection was served")
            #expect(cap.metrics?.contains("emojiart_connections_cut_total{reason=\"over_limit\"} 1") == true, "\(cap.metrics ?? "no metrics")")
        }
    }

    /// A client that stops reading `/events` is cut off once its answer's bytes have waited the
    /// send deadline: its stream ends and gives its slot back. The client's socket never reads
    /// (no auto-read, a small receive buffer), the server's sends into a small buffer
    /// (``SmallSendBuffer``; on loopback Linux grows it to megabytes) and the stream sends a
    /// comment every 0.1 ms, so the kernel's buffers fill within a second. Built as
    /// ``EmojiArtApp`` builds it, with the services in reach: the slot's release is what the test
    /// waits on.
    @Test(arguments: [true, false])
    func aClientThatStopsReadingAnEventStreamIsCutOff(fastLane: Bool) async throws {
        try await withGallery { galleryURL, pipeline in
            var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
            configuration.eventStreamHeartbeat = .microseconds(100)
            let (router, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: makeModel(galleryURL, pipeline), pipeline: pipeline)
            let lane = fastLane ? FastLane(serverName: "EmojiArt", respond: ImageController<BasicRequestContext>(services: services).fastLane) : nil
            let connections = ConnectionGuard(ConnectionLimits(sendTimeout: .seconds(1)))
            try await withLiveServer({ running in
                Application(
                    responder: router.buildResponder(),
                    server: .http1(
                        fastLane: lane, idleTimeout: .seconds(3600), connections: connections,
                        additionalChannelHandlers: { [SmallSendBuffer()] }
                    ),
                    configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "EmojiArt"),
                    onServerRunning: { await running($0.localAddress?.port ?? 0) }
                )
            }) { port in
                let client = try await NonReadingClient.send("GET /events HTTP/1.1\nHost: 127.0.0.1\n\n", port: port)
                defer { client.close(promise: nil) }
                let open = services.eventStreams.open
                for await count in open.stream() where count == 1 { break }
                for await count in open.stream() where count == 0 { break }
                #expect(connections.count(.sendTimeout) == 1)
            }
        }
    }
}

/// Gives the server's side of a connection a small, fixed send buffer (Linux doubles it and stops
/// growing it), so that a client that reads nothing fills it within a few kilobytes.
final class SmallSendBuffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func handlerAdded(context: ChannelHandlerContext) {
        _ = context.channel.setOption(.socketOption(.so_sndbuf), value: 4096)
    }
}
