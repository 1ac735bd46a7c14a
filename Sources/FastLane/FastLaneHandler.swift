import NIOCore
import NIOHTTP1
import Synchronization

/// The lane on one connection, right after NIO's HTTP/1 decoder: before the conversion to
/// HTTP types, Hummingbird's connection-state handler and its request loop, which see only the
/// requests passed on. The state handler's other duties hold as they are (a lane request is
/// read and answered in one go, so it never leaves one in progress: keep-alive, `Connection:
/// close` and graceful shutdown behave as without the lane); its idle time-out the lane keeps
/// itself (the state handler is given none), counting every request, answered here or passed on.
///
/// Its answers go out past NIO's response encoder, as bytes: each ``FastLane/Head`` keeps its
/// encoding for the current second, so an answer from memory encodes nothing. The encoder is
/// therefore not paired with the decoder (it would expect a head for every request decoded); the
/// lane does what the pairing did for the requests it passes on: an answer to a `HEAD` or
/// `CONNECT` gets no body (see ``WireHead/bodiless(_:connect:)``).
final class FastLaneHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let lane: FastLane
    /// The encoder's context: writing on it sends bytes on past the encoder. `nil` when the
    /// pipeline has no encoder before the lane (the lane then answers nothing).
    private var wire: ChannelHandlerContext?
    /// Every decision: this handler only carries out what it says.
    private var machine: FastLaneStateMachine
    private var idleCheck: Scheduled<Void>?
    /// Bytes of answers' bodies and of the lane's answers sent on to the encoder so far: less
    /// those still waiting, what the client took (Hummingbird's heads, encoded after, are not counted).
    private var sentBytes = 0
    /// Completed when the client closes its side of the connection
    /// (``FastLaneHTTP1Channel/connectionEnd``): the lane sees that event anyway, so its
    /// pipeline needs no handler of its own for it on every read.
    private let end: EventLoopPromise<Void>?

    init(_ lane: FastLane, idleTimeout: TimeAmount?, end: EventLoopPromise<Void>? = nil) {
        self.lane = lane
        self.machine = FastLaneStateMachine(idleTimeout: idleTimeout)
        self.end = end
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed? = event as? ChannelEvent { end?.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        wire = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
        if wire != nil { machine.wireFound() }
        if context.channel.isActive { scheduleIdleCheck(machine.connectionActive(now: context.eventLoop.now), context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
        machine.removed()
        wire = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        scheduleIdleCheck(machine.connectionActive(now: context.eventLoop.now), context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = context.eventLoop.now
        switch unwrapInboundIn(data) {
        case let .head(head):
            let facts = FastLaneStateMachine.Head(
                isPlain: Self.isPlain(head), isKeepAlive: head.isKeepAlive,
                answering: head.method == .HEAD ? .headOnly : head.method == .CONNECT ? .connect : .any
            )
            if machine.headReceived(facts, isWritable: context.channel.isWritable, now: now) == .askLane, let wire {
                let request = FastLane.Request(head)
                if let answer = lane.respond(request) {
                    write(answer, head: head.method == .HEAD, wire: wire)
                    scheduleIdleCheck(machine.laneAnswered(now: now), context)
                    return
                }
                machine.laneDeclined(facts)
            }
            context.fireChannelRead(data)
        case .body:
            if machine.bodyReceived(now: now) == .pass { context.fireChannelRead(data) }
        case .end:
            if machine.endReceived(now: now) == .pass { context.fireChannelRead(data) }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { machine.outputDrained(now: context.eventLoop.now) }
        context.fireChannelWritabilityChanged()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        let action = machine.readComplete()
        if action.flush { context.flush() }
        // A read the lane answered whole is nothing to Hummingbird: telling its handlers of the
        // read's end would cost every memory hit a walk through them for nothing.
        if action.fireReadComplete { context.fireChannelReadComplete() }
    }

    /// Hummingbird's answers: each end is the end of the oldest request passed on. An answer to a
    /// `HEAD` or `CONNECT` goes out without its body, as NIO's paired encoder sends it.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case let .head(head):
            if case let .writeBodiless(connect) = machine.answerHead(statusCode: Int(head.status.code)), let wire {
                wire.write(NIOAny(IOData.byteBuffer(WireHead.bodiless(head, connect: connect))), promise: promise)
                return
            }
        case let .body(body):
            if machine.answerBody() == .fail {
                promise?.fail(NIOHTTPResponseEncoderError.responseBodyNotAllowed)
                return
            }
            sentBytes &+= body.readableBytes
        case .end:
            let (action, check) = machine.answerEnd(now: context.eventLoop.now)
            scheduleIdleCheck(check, context)
            if action == .completeEmpty, let wire {
                // Nothing to send, but the promise completes in order with the writes before it.
                wire.write(NIOAny(IOData.byteBuffer(ByteBuffer())), promise: promise)
                return
            }
        }
        context.write(data, promise: promise)
    }

    /// An HTTP/1.1 `GET` or `HEAD` of an origin-form target without a body, `Expect` or
    /// `Connection`: what the lane may answer.
    static func isPlain(_ head: HTTPRequestHead) -> Bool {
        guard head.method == .GET || head.method == .HEAD, head.version == .http1_1, head.uri.utf8.first == UInt8(ascii: "/") else {
            return false
        }
        let headers = head.headers
        if let length = headers.first(name: "content-length"), length != "0" { return false }
        return !headers.contains(name: "transfer-encoding") && !headers.contains(name: "expect") && !headers.contains(name: "connection")
    }

    /// Sends `answer` past the encoder: its head's bytes for this second, then its body (not for
    /// `HEAD`, nor for a status that cannot have one). The flush comes at the end of the read.
    private func write(_ answer: FastLane.Answer, head isHead: Bool, wire: ChannelHandlerContext) {
        let body = answer.body
        let head = answer.head
        let headBytes = head.bytes(date: lane.date.value, serverName: lane.serverName, bodyLength: body.readableBytes)
        wire.write(NIOAny(IOData.byteBuffer(headBytes)), promise: nil)
        sentBytes &+= headBytes.readableBytes
        if !isHead, head.mayHaveBody, body.readableBytes > 0 {
            wire.write(NIOAny(IOData.byteBuffer(body)), promise: nil)
            sentBytes &+= body.readableBytes
        }
        lane.answers.count.add(1, ordering: .relaxed)
    }
}

extension FastLaneHandler {
    /// Schedules the idle check the machine asked for (Hummingbird's idle time-out, kept by the
    /// lane because only the lane sees every request), and carries out what it says when it fires.
    fileprivate func scheduleIdleCheck(_ deadline: NIODeadline?, _ context: ChannelHandlerContext) {
        guard let deadline else { return }
        idleCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            idleCheck = nil
            let waiting = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
            switch machine.idleCheckFired(now: context.eventLoop.now, waitingBytes: waiting, takenBytes: sentBytes &- waiting) {
            case .none: break
            case .close: context.close(promise: nil)
            case let .check(at): scheduleIdleCheck(at, context)
            }
        }
    }
}

@available(*, unavailable)
extension FastLaneHandler: Sendable {}
