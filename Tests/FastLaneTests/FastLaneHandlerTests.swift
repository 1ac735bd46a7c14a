@testable import FastLane
import Foundation
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Testing

/// The lane's handler alone in a channel, with a recorder where Hummingbird's handlers would be:
/// what it passes on, and what it keeps from them.
@Suite struct FastLaneHandlerTests {
    /// Counts what reaches the handlers after the lane.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        var reads: [HTTPServerRequestPart] = []
        var readCompletes = 0

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            reads.append(unwrapInboundIn(data))
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            readCompletes += 1
        }
    }

    /// A lane answering `/hit` from memory and passing everything else on.
    func channel(idleTimeout: TimeAmount? = nil) throws -> (EmbeddedChannel, Recorder) {
        let lane = FastLane(serverName: "Test") { request in
            request.target == "/hit"
                ? FastLane.Answer(status: .ok, headerFields: [.contentType: "text/plain"], body: ByteBuffer(string: "hit"))
                : nil
        }
        let recorder = Recorder()
        let channel = EmbeddedChannel()
        // The encoder first, as in the server's pipeline: the lane writes its answers past it.
        try channel.pipeline.syncOperations.addHandlers([HTTPResponseEncoder(), FastLaneHandler(lane, idleTimeout: idleTimeout), recorder])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, recorder)
    }

    /// One read from the socket holding `paths`' requests, as the decoder hands them on.
    func read(_ paths: [String], into channel: EmbeddedChannel) throws {
        // Not `writeInbound`: it ends a read after every part.
        let pipeline = channel.pipeline.syncOperations
        for path in paths {
            pipeline.fireChannelRead(NIOAny(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: path))))
            pipeline.fireChannelRead(NIOAny(HTTPServerRequestPart.end(nil)))
        }
        pipeline.fireChannelReadComplete()
        try channel.throwIfErrorCaught()
    }

    /// Everything written to the socket so far.
    func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            guard case let .byteBuffer(buffer) = data else { continue }
            text += String(buffer: buffer)
        }
        return text
    }

    @Test func aReadTheLaneAnsweredWholeNeverReachesHummingbird() throws {
        let (channel, recorder) = try channel()
        defer { _ = try? channel.finish() }
        try read(["/hit", "/hit"], into: channel)
        #expect(recorder.reads.isEmpty)
        // Nothing was handed on, so there is no read for Hummingbird's handlers to finish.
        #expect(recorder.readCompletes == 0)
        #expect(try written(channel).components(separatedBy: "HTTP/1.1 200 OK\r\n").count - 1 == 2)
    }

    @Test func everyReadPassedOnIsFollowedByItsReadComplete() throws {
        let (channel, recorder) = try channel()
        defer { _ = try? channel.finish() }
        try read(["/miss"], into: channel)
        #expect(recorder.reads.count == 2)  // head and end
        #expect(recorder.readCompletes == 1)
        // A later read the lane answers alone (Hummingbird has answered the miss by then) adds none.
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .notFound)))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        try read(["/hit"], into: channel)
        #expect(recorder.reads.count == 2)
        #expect(recorder.readCompletes == 1)
        // A read with a hit and a miss: the miss is passed on, and so is the read's end.
        try read(["/hit", "/miss"], into: channel)
        #expect(recorder.reads.count == 4)
        #expect(recorder.readCompletes == 2)
    }

    // MARK: - The bytes on the wire

    /// The head Hummingbird's application sends for `answer`'s status and fields: `Content-Length`
    /// added when missing, `Date` and `Server` set (appended when absent, replaced when present).
    static func applicationHead(_ answer: FastLane.Answer, date: String, serverName: String?) -> HTTPResponseHead {
        var fields = answer.headerFields
        if !fields.contains(.contentLength) { fields.append(HTTPField(name: .contentLength, value: String(answer.body.readableBytes))) }
        fields[.date] = date
        if let serverName { fields[.server] = serverName }
        return HTTPResponseHead(HTTPResponse(status: answer.status, headerFields: fields))
    }

    /// What NIO's encoder writes for `parts`, paired with its decoder as in Hummingbird's own
    /// pipeline, answering a `method` request.
    static func nioWrites(_ parts: [HTTPServerResponsePart], answering method: String) throws -> String {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false
        )
        try channel.writeInbound(ByteBuffer(string: "\(method) / HTTP/1.1\r\nHost: test\r\n\r\n"))
        for part in parts { channel.write(part, promise: nil) }
        channel.flush()
        var text = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            guard case let .byteBuffer(buffer) = data else { continue }
            text += String(buffer: buffer)
        }
        return text
    }

    static let date = "Sun, 22 Nov 2026 13:00:00 GMT"

    @Test(arguments: [
        (HTTPResponse.Status.ok, ["ETag: \"e\"", "Content-Type: image/png", "Content-Length: 3"], "abc", "EmojiArt"),
        (.ok, ["Content-Type: image/png"], "abcd", nil),
        (.notModified, ["ETag: \"e\"", "Cache-Control: no-cache"], "", "EmojiArt"),
        (.ok, ["Date: Mon, 01 Jan 2024 00:00:00 GMT", "X-Other: 1"], "ab", "EmojiArt"),
        (.notFound, ["Server: Other", "Server: Twice", "Content-Length: 0"], "", "EmojiArt"),
        (.notFound, ["Server: Other"], "gone", nil),
        (.noContent, ["Content-Length: 0", "Transfer-Encoding: chunked"], "", "EmojiArt"),
        (HTTPResponse.Status(code: 299, reasonPhrase: "Odd But Fine"), ["Transfer-Encoding: chunked", "X-A: b"], "xyz", "EmojiArt"),
    ] as [(HTTPResponse.Status, [String], String, String?)])
    func theLanesHeadIsWhatNIOWouldWrite(status: HTTPResponse.Status, fields: [String], body: String, server: String?) throws {
        var headerFields = HTTPFields()
        for field in fields {
            let parts = field.split(separator: ": ", maxSplits: 1).map(String.init)
            headerFields.append(HTTPField(name: try #require(HTTPField.Name(parts[0])), value: parts[1]))
        }
        let answer = FastLane.Answer(status: status, headerFields: headerFields, body: ByteBuffer(string: body))
        let head = Self.applicationHead(answer, date: Self.date, serverName: server)
        let lanes = String(buffer: answer.head.bytes(date: Self.date, serverName: server, bodyLength: answer.body.readableBytes))
        // The head alone: for `GET` NIO's writes carry the body after it; for `HEAD` they do not.
        for method in ["GET", "HEAD"] {
            let nio = try Self.nioWrites([.head(head)], answering: method)
            #expect(lanes == nio, "\(method): the lane's head differs from NIO's")
        }
        // Kept for the second: the same bytes again, new ones for the next second.
        let first = answer.head.bytes(date: Self.date, serverName: server, bodyLength: answer.body.readableBytes)
        let again = answer.head.bytes(date: Self.date, serverName: server, bodyLength: answer.body.readableBytes)
        #expect(String(buffer: again) == lanes)
        // The very buffer kept, not the same bytes encoded again.
        #expect(first.withUnsafeReadableBytes { $0.baseAddress } == again.withUnsafeReadableBytes { $0.baseAddress })
        let next = answer.head.bytes(date: "Sun, 22 Nov 2026 13:00:01 GMT", serverName: server, bodyLength: answer.body.readableBytes)
        #expect(String(buffer: next) == lanes.replacingOccurrences(of: Self.date, with: "Sun, 22 Nov 2026 13:00:01 GMT"))
    }

    @Test(arguments: [
        (HTTPResponseStatus.ok, [("content-type", "text/plain"), ("content-length", "4")]),
        (.ok, [("content-type", "text/plain")]),  // streamed: NIO adds chunked framing, sends no chunks
        (.ok, [("transfer-encoding", "chunked"), ("content-length", "4")]),
        (.notFound, [("content-length", "9"), ("server", "Test")]),
        (.notModified, [("etag", "\"e\""), ("content-length", "4")]),
        (.custom(code: 299, reasonPhrase: "Odd"), [("x-a", "b")]),
    ] as [(HTTPResponseStatus, [(String, String)])])
    func aPassedOnHeadOrConnectIsAnsweredWithoutABodyAsNIODoes(status: HTTPResponseStatus, fields: [(String, String)]) throws {
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: HTTPHeaders(fields))
        let parts: [HTTPServerResponsePart] = [.head(head), .end(nil)]
        for (method, connect) in [("HEAD", false), ("CONNECT", true)] {
            #expect(String(buffer: WireHead.bodiless(head, connect: connect)) == (try Self.nioWrites(parts, answering: method)), "\(method)")
        }
    }

    @Test func aPassedOnHeadGetsNoBodyThroughTheLane() throws {
        let (channel, recorder) = try channel()
        defer { _ = try? channel.finish() }
        let pipeline = channel.pipeline.syncOperations
        pipeline.fireChannelRead(NIOAny(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .HEAD, uri: "/miss"))))
        pipeline.fireChannelRead(NIOAny(HTTPServerRequestPart.end(nil)))
        pipeline.fireChannelReadComplete()
        #expect(recorder.reads.count == 2)
        // Hummingbird answers with a body, which must not reach the wire; every promise completes, in order.
        let head = HTTPResponseHead(version: .http1_1, status: .notFound, headers: ["content-length": "4"])
        let wrote = channel.write(HTTPServerResponsePart.head(head))
        let body = channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "gone"))))
        let end = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        try wrote.wait()
        #expect(throws: NIOHTTPResponseEncoderError.self) { try body.wait() }
        try end.wait()
        #expect(try written(channel) == "HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\n")
        // The next answer, to a GET, has its body.
        pipeline.fireChannelRead(NIOAny(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/miss"))))
        pipeline.fireChannelRead(NIOAny(HTTPServerRequestPart.end(nil)))
        pipeline.fireChannelReadComplete()
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "gone"))), promise: nil)
        try channel.writeAndFlush(HTTPServerResponsePart.end(nil)).wait()
        #expect(try written(channel) == "HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\ngone")
    }

    // The idle time-out, on the embedded loop's clock: time moves only when the test moves it.

    @Test func anIdleConnectionIsClosedWhenItsTimeOutHasPassed() throws {
        let (channel, _) = try channel(idleTimeout: .seconds(1))
        defer { _ = try? channel.finish() }
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive, "open until the time-out has passed")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func aConnectionAskingMoreOftenThanItsTimeOutStaysOpen() throws {
        let (channel, _) = try channel(idleTimeout: .seconds(1))
        defer { _ = try? channel.finish() }
        // Twenty answers by the lane, 600 ms apart: twelve seconds, never idle for one.
        for _ in 0..<20 {
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(600))
            try read(["/hit"], into: channel)
            #expect(channel.isActive)
        }
        #expect(try written(channel).components(separatedBy: "HTTP/1.1 200 OK\r\n").count - 1 == 20)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive, "idle for the time-out after the last answer")
    }

    @Test func aRequestStillBeingAnsweredKeepsItsConnectionOpen() throws {
        let (channel, recorder) = try channel(idleTimeout: .seconds(1))
        defer { _ = try? channel.finish() }
        // A miss, passed on and read whole: Hummingbird takes ten seconds to answer it.
        try read(["/miss"], into: channel)
        #expect(recorder.reads.count == 2)
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(channel.isActive, "an answer is owed")
        channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .notFound)), promise: nil)
        try channel.writeAndFlush(HTTPServerResponsePart.end(nil)).wait()
        // The answer starts the wait again.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    /// An answer still going out when the time-out passes: the check reads the bytes the channel
    /// still holds to send (`bufferedWritableBytes`); seen for the first time (or fewer than at
    /// the last check) they put the close off, the same number again (the client took nothing)
    /// closes. Here bytes written past the encoder and never flushed stand for a slow client's.
    @Test func anAnswerStillGoingOutPutsTheCloseOffUntilTheClientStopsTakingIt() throws {
        let (channel, _) = try channel(idleTimeout: .seconds(1))
        defer { _ = try? channel.finish() }
        try read(["/hit"], into: channel)
        let wire = try channel.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
        wire.write(NIOAny(ByteBuffer(repeating: 0, count: 100_000)), promise: nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(channel.isActive, "100,000 bytes still going out")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive, "as many a time-out later: the client took none of them")
    }

    /// Hummingbird's answer to a request passed on, its head and 100,000 bytes of body, stuck on
    /// the way out: written and never flushed, as to a client that reads nothing.
    func writeAnswerThatStopsGoingOut(_ channel: EmbeddedChannel) {
        channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: ["content-length": "100000"])), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(repeating: 0, count: 100_000))), promise: nil)
    }

    /// Two requests passed on, pipelined, and a client that reads nothing: Hummingbird's first
    /// answer stops going out part way. Owed
    /// answers do not keep such a connection: it is closed as an idle one is.
    @Test func answersOwedThatTheClientNeverTakesDoNotHoldTheConnection() throws {
        let (channel, recorder) = try channel(idleTimeout: .seconds(1))
        defer { _ = try? channel.finish() }
        try read(["/miss", "/miss"], into: channel)
        #expect(recorder.reads.count == 4)
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(channel.isActive, "the answers are being made")
        writeAnswerThatStopsGoingOut(channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(channel.isActive, "bytes going out, seen for the first time")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive, "a time-out later the client had taken none of them")
    }

    /// The client took the first part of an answer (flushed here), and more waits than before:
    /// the bytes sent on less those waiting grew, which is activity; then nothing more is taken.
    @Test func bytesTakenPutTheCloseOffThoughMoreWait() throws {
        let (channel, _) = try channel(idleTimeout: .seconds(1))
        defer { _ = try? channel.finish() }
        try read(["/miss"], into: channel)
        channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(repeating: 0, count: 100_000))), promise: nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(channel.isActive, "seen for the first time")
        channel.flush()
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(repeating: 0, count: 150_000))), promise: nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(channel.isActive, "150,000 bytes wait, more than 100,000, but the 100,000 were taken")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive, "then none")
    }

    @Test func theChannelBecomingWritableAgainPutsTheCloseOff() throws {
        let (channel, _) = try channel(idleTimeout: .seconds(1))
        defer { _ = try? channel.finish() }
        try read(["/miss"], into: channel)
        writeAnswerThatStopsGoingOut(channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(500))
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(500))
        #expect(channel.isActive, "the client took bytes half a time-out ago")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1499))
        #expect(channel.isActive, "as many bytes still waiting: seen for the first time since")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func aHalfReadRequestIsNotWaitedFor() throws {
        let (channel, recorder) = try channel(idleTimeout: .seconds(1))
        defer { _ = try? channel.finish() }
        // A head passed on late in the idle wait, its end never sent: the read starts the wait
        // again, and a client that then stalls mid-request is idle too.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(900))
        let pipeline = channel.pipeline.syncOperations
        pipeline.fireChannelRead(NIOAny(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/miss"))))
        pipeline.fireChannelReadComplete()
        #expect(recorder.reads.count == 1)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive, "a read is activity")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }
}
