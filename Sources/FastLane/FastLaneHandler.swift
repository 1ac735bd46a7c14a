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

    /// What the parts being read belong to.
    private enum Reading {
        /// Between requests.
        case idle
        /// A request passed on to Hummingbird: its parts follow it.
        case passing
        /// A request the lane answered: its remaining parts (the end) are dropped.
        case answered
    }

    /// What an answer to a passed-on request may carry.
    private enum Answering {
        /// Anything: the answer is Hummingbird's, encoded by NIO.
        case any
        /// A head without a body: the request was a `HEAD`.
        case headOnly
        /// A head without a body or framing fields: the request was a `CONNECT`.
        case connect
    }

    private let lane: FastLane
    /// The encoder's context: writing on it sends bytes on past the encoder. `nil` when the
    /// pipeline has no encoder before the lane (the lane then answers nothing).
    private var wire: ChannelHandlerContext?
    private var reading = Reading.idle
    /// What each passed-on request's answer may carry, oldest first.
    private var owed = CircularBuffer<Answering>()
    /// What the answer being written may carry.
    private var answering = Answering.any
    /// Requests passed on whose answers Hummingbird has not finished writing.
    private var passedOn = 0
    /// Set once a passed-on request may end the connection: from then on everything is passed on.
    private var passingEverything = false
    private var needsFlush = false
    /// Whether a part was passed on since the last read-complete that was: only then do
    /// Hummingbird's handlers need one (it tells them to deliver what they were given).
    private var passedSinceReadComplete = false
    // The idle time-out, when there is one.
    private let idleTimeout: TimeAmount?
    // On the event loop's clock (`EventLoop.now`), so a test's loop can move time on.
    private var lastActivity = NIODeadline.uptimeNanoseconds(0)
    private var isRequestBeingRead = false
    private var idleCheck: Scheduled<Void>?

    init(_ lane: FastLane, idleTimeout: TimeAmount?) {
        self.lane = lane
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        wire = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
        if context.channel.isActive { startIdleWait(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
        wire = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        startIdleWait(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if idleTimeout != nil { lastActivity = context.eventLoop.now }
        switch unwrapInboundIn(data) {
        case let .head(head):
            isRequestBeingRead = true
            if let wire, passedOn == 0, !passingEverything, context.channel.isWritable, Self.isPlain(head),
               let answer = lane.respond(FastLane.Request(head)) {
                reading = .answered
                write(answer, head: head.method == .HEAD, wire: wire, context: context)
            } else {
                // `Connection: close`, or HTTP/1.0 without keep-alive: Hummingbird may end the connection.
                if !head.isKeepAlive { passingEverything = true }
                passedOn += 1
                if wire != nil { owed.append(head.method == .HEAD ? .headOnly : head.method == .CONNECT ? .connect : .any) }
                reading = .passing
                pass(data, context: context)
            }
        case .body:
            if reading != .answered { pass(data, context: context) }
        case .end:
            isRequestBeingRead = false
            if reading != .answered { pass(data, context: context) }
            reading = .idle
        }
    }

    private func pass(_ data: NIOAny, context: ChannelHandlerContext) {
        passedSinceReadComplete = true
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        // A read the lane answered whole is nothing to Hummingbird: telling its handlers of the
        // read's end would cost every memory hit a walk through them for nothing.
        if passedSinceReadComplete {
            passedSinceReadComplete = false
            context.fireChannelReadComplete()
        }
    }

    /// Hummingbird's answers: each end is the end of the oldest request passed on. An answer to a
    /// `HEAD` or `CONNECT` goes out without its body, as NIO's paired encoder sends it.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case let .head(head):
            // A 1xx other than 101 comes before the answer proper, which it does not stand for.
            let code = head.status.code
            if (100..<200).contains(code), code != 101 { break }
            answering = owed.popFirst() ?? .any
            if answering != .any, let wire {
                wire.write(NIOAny(IOData.byteBuffer(WireHead.bodiless(head, connect: answering == .connect))), promise: promise)
                return
            }
        case .body:
            if answering != .any {
                promise?.fail(NIOHTTPResponseEncoderError.responseBodyNotAllowed)
                return
            }
        case .end:
            let bodiless = answering != .any
            answering = .any
            if passedOn > 0 {
                passedOn -= 1
                if passedOn == 0 { everythingAnswered(context) }
            }
            if bodiless, let wire {
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
    /// `HEAD`, nor for a status that cannot have one).
    private func write(_ answer: FastLane.Answer, head isHead: Bool, wire: ChannelHandlerContext, context: ChannelHandlerContext) {
        let body = answer.body
        let head = answer.head
        wire.write(NIOAny(IOData.byteBuffer(head.bytes(date: lane.date.value, serverName: lane.serverName, bodyLength: body.readableBytes))), promise: nil)
        if !isHead, head.mayHaveBody, body.readableBytes > 0 {
            wire.write(NIOAny(IOData.byteBuffer(body)), promise: nil)
        }
        needsFlush = true
        lane.answers.count.add(1, ordering: .relaxed)
        if passedOn == 0 { everythingAnswered(context) }
    }
}

extension FastLaneHandler {
    /// Hummingbird's idle time-out (its `HTTPConnectionStateHandler`'s state machine), kept by
    /// the lane because only the lane sees every request: once the time-out has passed since the
    /// last read or the last answer owed, the connection is closed; while Hummingbird is still
    /// answering a request that was read whole, it is left open (its answer starts the wait again).
    fileprivate func scheduleIdleCheck(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        guard let idleTimeout, idleCheck == nil else { return }
        idleCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            idleCheck = nil
            if !isRequestBeingRead, passedOn > 0 { return }
            if context.eventLoop.now >= lastActivity + idleTimeout {
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(context, at: lastActivity + idleTimeout)
            }
        }
    }

    /// No answer is owed any more: the idle wait starts now.
    fileprivate func everythingAnswered(_ context: ChannelHandlerContext) {
        guard let idleTimeout else { return }
        lastActivity = context.eventLoop.now
        scheduleIdleCheck(context, at: lastActivity + idleTimeout)
    }

    fileprivate func startIdleWait(_ context: ChannelHandlerContext) {
        guard let idleTimeout else { return }
        lastActivity = context.eventLoop.now
        scheduleIdleCheck(context, at: lastActivity + idleTimeout)
    }
}

@available(*, unavailable)
extension FastLaneHandler: Sendable {}
