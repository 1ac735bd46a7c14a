import Foundation
import HTTPCaching
import NIOCore
import NIOHTTP1

/// The deadlines of one connection (``ConnectionLimits``), first in its pipeline, next to the
/// socket: it sees every byte read and every byte written, the lane's answers and Hummingbird's
/// alike.
///
/// - A request's deadline starts with the first bytes read while no request is being read, and
///   ends when ``RequestEndWatch`` sees that request's end decoded. Bytes in between do not move
///   it: a client that trickles a head or a body is cut off one ``ConnectionLimits/requestTimeout``
///   after it began, however steadily it trickles. (Bytes of a next request read together with
///   the end of one start its deadline at the next read.)
/// - An answer's deadline starts when a flush leaves bytes the socket did not take
///   (`bufferedWritableBytes`), and moves on each time the client has taken some since; when
///   ``ConnectionLimits/sendTimeout`` passes with none taken, the connection is closed. A client
///   on a slow network taking a long answer goes on; one that stops reading an event stream, whose
///   writes then wait, does not hold the connection, the stream's slot and its memory for ever.
final class ClientDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let connections: ConnectionGuard
    /// When the request being read began (its first bytes), on the loop's clock; `nil` between requests.
    private var requestStarted: NIODeadline?
    /// The one check of the request deadline this connection has scheduled: it is not scheduled
    /// and cancelled per request (a timer costs more than the rest of a memory hit's handling);
    /// when it fires with a request under way that has time left, it is scheduled again for that
    /// request's deadline.
    private var requestDeadline: Scheduled<Void>?
    private var sendCheck: Scheduled<Void>?
    /// Bytes written through this handler so far: less those still waiting, what the client took.
    private var written = 0
    /// What the client had taken when the pending send check was scheduled.
    private var takenAtCheck = 0
    private var isCut = false

    init(_ connections: ConnectionGuard) {
        self.connections = connections
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelChecks()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelChecks()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if requestStarted == nil, !isCut, let timeout = connections.limits.requestTimeout {
            let now = context.eventLoop.now
            requestStarted = now
            if requestDeadline == nil { scheduleRequestCheck(at: now + timeout, timeout: timeout, context) }
        }
        context.fireChannelRead(data)
    }

    private func scheduleRequestCheck(at deadline: NIODeadline, timeout: TimeAmount, _ context: ChannelHandlerContext) {
        requestDeadline = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            requestDeadline = nil
            guard let started = requestStarted else { return }  // between requests: the next one schedules again
            if context.eventLoop.now < started + timeout { return scheduleRequestCheck(at: started + timeout, timeout: timeout, context) }
            cut(.requestTimeout, context)
        }
    }

    /// The request being read was read whole (``RequestEndWatch``): its deadline is met.
    func requestReceived() {
        requestStarted = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        written &+= unwrapOutboundIn(data).readableBytes
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
        guard sendCheck == nil, !isCut, let timeout = connections.limits.sendTimeout else { return }
        let waiting = Self.waitingBytes(context)
        if waiting > 0 { scheduleSendCheck(taken: written &- waiting, in: timeout, context) }
    }

    private func scheduleSendCheck(taken: Int, in timeout: TimeAmount, _ context: ChannelHandlerContext) {
        takenAtCheck = taken
        sendCheck = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            sendCheck = nil
            let waiting = Self.waitingBytes(context)
            guard waiting > 0 else { return }  // all sent: the next flush that leaves bytes starts again
            let taken = written &- waiting
            if taken != takenAtCheck { return scheduleSendCheck(taken: taken, in: timeout, context) }
            cut(.sendTimeout, context)
        }
    }

    private static func waitingBytes(_ context: ChannelHandlerContext) -> Int {
        (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
    }

    private func cut(_ reason: ConnectionGuard.Cut, _ context: ChannelHandlerContext) {
        guard !isCut else { return }
        isCut = true
        cancelChecks()
        connections.cut(reason)
        context.close(promise: nil)
    }

    private func cancelChecks() {
        requestStarted = nil
        requestDeadline?.cancel()
        requestDeadline = nil
        sendCheck?.cancel()
        sendCheck = nil
    }
}

/// Tells ``ClientDeadlines`` when a request was read whole: right after NIO's decoder (and
/// `RequestHeadCheck`), before the lane, which drops the end of a request it answered.
final class RequestEndWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let deadlines: ClientDeadlines

    init(_ deadlines: ClientDeadlines) {
        self.deadlines = deadlines
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) { deadlines.requestReceived() }
        context.fireChannelRead(data)
    }
}

/// Answers a request with a body 413 and closes its connection: no route of the app or the
/// gallery takes a body (their `POST`s act on the path alone), so a body is never read, and a
/// client cannot make a server read one slowly or at length. Behind the lane (which passes every
/// request with a body on) and before Hummingbird, on NIO's parts: the answer comes in its turn,
/// after the answers to the requests before it, and Hummingbird never sees the request; nothing
/// read after it goes on (it is read and dropped for at most ``linger``, then the connection closes).
final class BodyRefusal: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let connections: ConnectionGuard
    /// Requests passed on whose answers have not ended.
    private var owed = 0
    /// The request refused: whether it was a `HEAD`, once one was read.
    private var refused: (isHead: Bool, written: Bool)?

    init(_ connections: ConnectionGuard) {
        self.connections = connections
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard refused == nil else { return }
        if case let .head(head) = unwrapInboundIn(data) {
            guard !Self.hasBody(head) else {
                refused = (head.method == .HEAD, false)
                connections.cut(.body)
                if owed == 0 { refuse(context) }
                return
            }
            owed += 1
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        guard case .end = unwrapOutboundIn(data) else { return }
        owed = max(0, owed - 1)  // (Hummingbird's 400 for a head it could not parse answers none passed)
        if owed == 0, refused != nil { refuse(context) }
    }

    /// Whether `head` says a body follows: a `Content-Length` other than 0 (`00` too is none), or
    /// any `Transfer-Encoding` (NIO's decoder has refused what frames a body wrongly).
    static func hasBody(_ head: HTTPRequestHead) -> Bool {
        head.headers.contains(name: "transfer-encoding") || head.headers["content-length"].contains { Int($0) != 0 }
    }

    private func refuse(_ context: ChannelHandlerContext) {
        guard let refusal = refused, !refusal.written else { return }
        refused?.written = true
        let body = ByteBuffer(string: "This server takes no request body: send the request without one.\n")
        let headers: HTTPHeaders = [
            "Content-Type": "text/plain; charset=utf-8", "Content-Length": "\(body.readableBytes)",
            "Connection": "close", "Date": HTTPDate.format(Date()),
        ]
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .payloadTooLarge, headers: headers))), promise: nil)
        if !refusal.isHead { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        // Closed as RFC 9112 (9.6) says, lest a reset lose the answer: the sending side first,
        // then the rest once the client closes its own or after `linger`, what it sends meanwhile
        // read and dropped (a client still sending into a closed socket gets a reset, which can
        // reach it before the 413 is read).
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(mode: .output, promise: nil)
            context.eventLoop.assumeIsolated().scheduleTask(in: Self.linger) { context.close(promise: nil) }
        }
    }

    /// How long a refused connection goes on reading, after its 413, for its client to close it.
    static let linger = TimeAmount.seconds(2)

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if refused?.written == true, case .inputClosed? = event as? ChannelEvent { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }
}
