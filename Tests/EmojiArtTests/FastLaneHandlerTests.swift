@testable import FastLane
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
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
    func channel() throws -> (EmbeddedChannel, Recorder) {
        let lane = FastLane(serverName: "Test") { request in
            request.target == "/hit"
                ? FastLane.Answer(status: .ok, headerFields: [.contentType: "text/plain"], body: ByteBuffer(string: "hit"))
                : nil
        }
        let recorder = Recorder()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([FastLaneHandler(lane, idleTimeout: nil), recorder])
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

    @Test func aReadTheLaneAnsweredWholeNeverReachesHummingbird() throws {
        let (channel, recorder) = try channel()
        defer { _ = try? channel.finish() }
        try read(["/hit", "/hit"], into: channel)
        #expect(recorder.reads.isEmpty)
        // Nothing was handed on, so there is no read for Hummingbird's handlers to finish.
        #expect(recorder.readCompletes == 0)
        var answers = 0
        while let part = try channel.readOutbound(as: HTTPServerResponsePart.self) {
            if case .end = part { answers += 1 }
        }
        #expect(answers == 2)
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
}
