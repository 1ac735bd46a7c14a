@testable import FastLane
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// The request deadline and the body refusal on an embedded loop, whose clock the tests move:
/// the cases the live tests (`SlowClientTests`, `GallerySlowClientTests`) cannot pin down, such
/// as which byte starts a deadline and which answer a refusal waits for.
@Suite struct ClientDeadlinesTests {
    /// The head of the server's pipeline as `FastLaneHTTP1Channel` builds it, without a lane:
    /// the deadlines, NIO's codec, the end watch and the body refusal.
    func channel(_ connections: ConnectionGuard) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let deadlines = ClientDeadlines(connections)
        try channel.pipeline.syncOperations.addHandlers([
            deadlines, HTTPResponseEncoder(), ByteToMessageHandler(HTTPRequestDecoder()), RequestEndWatch(deadlines), BodyRefusal(connections),
        ])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    func send(_ text: String, to channel: EmbeddedChannel) throws {
        try channel.writeInbound(ByteBuffer(string: text.replacingOccurrences(of: "\n", with: "\r\n")))
    }

    /// What the server wrote so far.
    func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            if case let .byteBuffer(buffer) = data { text += String(buffer: buffer) }
        }
        return text
    }

    /// The deadline runs from a request's first byte: bytes trickling in do not move it, and the
    /// connection is closed when it passes, counted.
    @Test func aTrickledHeadIsClosedAtItsDeadline() throws {
        let connections = ConnectionGuard(ConnectionLimits(requestTimeout: .seconds(10)))
        let channel = try channel(connections)
        try send("GET / HTTP/1.1\nHost: a\n", to: channel)
        for _ in 0..<9 {
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
            try send("X", to: channel)
        }
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
        #expect(connections.count(.requestTimeout) == 1)
    }

    /// A request read whole meets its deadline; the next one's starts with its own first byte, not
    /// with the connection or the last request.
    @Test func eachRequestHasItsOwnDeadline() throws {
        let connections = ConnectionGuard(ConnectionLimits(requestTimeout: .seconds(10)))
        let channel = try channel(connections)
        try send("GET / HTTP/1.1\nHost: a\n\n", to: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive, "a connection between requests is the idle time-out's")
        try send("GET / HTTP/1.1\n", to: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        try send("Host: a\n\n", to: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        #expect(connections.count(.requestTimeout) == 0)
    }

    /// A body is answered 413 at once when no answer is owed, with the connection's end; nothing
    /// read after it goes on, and it is counted.
    @Test(arguments: [("Content-Length: 5", "abcde"), ("Transfer-Encoding: chunked", "5\nabcde\n0\n\n")])
    func aBodyIsAnswered413(framing: String, body: String) throws {
        let connections = ConnectionGuard()
        let channel = try channel(connections)
        try send("POST /retry HTTP/1.1\nHost: a\n\(framing)\n\n\(body)GET / HTTP/1.1\nHost: a\n\n", to: channel)
        let answer = try written(channel)
        #expect(answer.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"), "\(answer)")
        #expect(answer.contains("Connection: close\r\n"))
        #expect(try channel.readInbound(as: HTTPServerRequestPart.self) == nil, "a part of the refused request or after it went on")
        #expect(connections.count(.body) == 1)
        channel.embeddedEventLoop.advanceTime(by: BodyRefusal.linger)
        #expect(!channel.isActive)
    }

    /// Behind a request whose answer is owed, the 413 waits for that answer's end: answers keep
    /// their requests' order.
    @Test func aRefusalWaitsForTheAnswerOwedBeforeIt() throws {
        let channel = try channel(ConnectionGuard())
        try send("GET /first HTTP/1.1\nHost: a\n\nGET / HTTP/1.1\nHost: a\nContent-Length: 5\n\n", to: channel)
        guard case let .head(first)? = try channel.readInbound(as: HTTPServerRequestPart.self) else {
            Issue.record("the first request did not go on")
            return
        }
        #expect(first.uri == "/first")
        #expect(try written(channel).isEmpty, "the 413 went out before the answer owed")
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "2"])
        try channel.writeOutbound(HTTPServerResponsePart.head(head))
        try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "ok"))))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        let text = try written(channel)
        let answered = try #require(text.range(of: "HTTP/1.1 200 OK"))
        let refusal = try #require(text.range(of: "HTTP/1.1 413"))
        #expect(answered.lowerBound < refusal.lowerBound)
    }

    /// Whether a head says a body follows.
    @Test(arguments: [
        ([String](), false), (["Content-Length: 0"], false), (["Content-Length: 00"], false), (["Content-Length: 1"], true),
        (["Transfer-Encoding: chunked"], true), (["Transfer-Encoding: gzip, chunked"], true),
    ])
    func hasBody(fields: [String], expected: Bool) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
        for field in fields {
            let parts = field.split(separator: ":", maxSplits: 1)
            head.headers.add(name: String(parts[0]), value: parts[1].trimmingCharacters(in: .whitespaces))
        }
        #expect(BodyRefusal.hasBody(head) == expected)
    }
}
