import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Synchronization

/// The lane on one connection, right after NIO's HTTP/1 decoder: before the conversion to
/// HTTP types, Hummingbird's connection-state handler and its request loop, which see only the
/// requests passed on. The state handler's other duties hold as they are (a lane request is
/// read and answered in one go, so it never leaves one in progress: keep-alive, `Connection:
/// close` and graceful shutdown behave as without the lane); its idle time-out the lane keeps
/// itself (the state handler is given none), counting every request, answered here or passed on.
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

    private let lane: FastLane
    private var reading = Reading.idle
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
    private var lastActivity = NIODeadline.now()
    private var isRequestBeingRead = false
    private var idleCheck: Scheduled<Void>?

    init(_ lane: FastLane, idleTimeout: TimeAmount?) {
        self.lane = lane
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startIdleWait(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        startIdleWait(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if idleTimeout != nil { lastActivity = .now() }
        switch unwrapInboundIn(data) {
        case let .head(head):
            isRequestBeingRead = true
            if passedOn == 0, !passingEverything, context.channel.isWritable, Self.isPlain(head),
               let answer = lane.respond(FastLane.Request(head)) {
                reading = .answered
                write(answer, head: head.method == .HEAD, context: context)
            } else {
                // `Connection: close`, or HTTP/1.0 without keep-alive: Hummingbird may end the connection.
                if !head.isKeepAlive { passingEverything = true }
                passedOn += 1
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

    /// Hummingbird's answers: each end is the end of the oldest request passed on.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), passedOn > 0 {
            passedOn -= 1
            if passedOn == 0 { everythingAnswered(context) }
        }
        context.write(data, promise: promise)
    }

    /// The head of `answer` as Hummingbird's application completes it: `Content-Length` added when
    /// missing, `Date` and `Server` set (appended when absent, replaced when present).
    static func response(_ answer: FastLane.Answer, date: String, serverName: String?) -> HTTPResponse {
        var fields = answer.headerFields
        if !fields.contains(.contentLength) { fields.append(HTTPField(name: .contentLength, value: String(answer.body.readableBytes))) }
        if fields.contains(.date) { fields[.date] = date } else { fields.append(HTTPField(name: .date, value: date)) }
        if let serverName {
            if fields.contains(.server) { fields[.server] = serverName } else { fields.append(HTTPField(name: .server, value: serverName)) }
        }
        return HTTPResponse(status: answer.status, headerFields: fields)
    }

    /// The same head as `HTTPResponseHead(response(answer, ...))`, made in one pass over the
    /// answer's fields when it sets neither `Date` nor `Server` (answers from memory do not): no copy of the
    /// fields, which would cost a good part of a memory hit.
    static func head(_ answer: FastLane.Answer, date: String, serverName: String?) -> HTTPResponseHead {
        var headers: [(String, String)] = []
        headers.reserveCapacity(answer.headerFields.count + 3)
        var hasLength = false
        for field in answer.headerFields {
            switch field.name {
            case .date, .server:
                return HTTPResponseHead(response(answer, date: date, serverName: serverName))
            case .contentLength:
                hasLength = true
            default:
                break
            }
            headers.append((field.name.rawName, field.value))
        }
        if !hasLength { headers.append((HTTPField.Name.contentLength.rawName, String(answer.body.readableBytes))) }
        headers.append((HTTPField.Name.date.rawName, date))
        if let serverName { headers.append((HTTPField.Name.server.rawName, serverName)) }
        let status = HTTPResponseStatus(statusCode: answer.status.code, reasonPhrase: answer.status.reasonPhrase)
        return HTTPResponseHead(version: .http1_1, status: status, headers: HTTPHeaders(headers))
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

    private func write(_ answer: FastLane.Answer, head: Bool, context: ChannelHandlerContext) {
        let response = Self.head(answer, date: lane.date.value, serverName: lane.serverName)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if !head, answer.body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(answer.body))), promise: nil)
        }
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
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
            if NIODeadline.now() >= lastActivity + idleTimeout {
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(context, at: lastActivity + idleTimeout)
            }
        }
    }

    /// No answer is owed any more: the idle wait starts now.
    fileprivate func everythingAnswered(_ context: ChannelHandlerContext) {
        guard let idleTimeout else { return }
        lastActivity = .now()
        scheduleIdleCheck(context, at: lastActivity + idleTimeout)
    }

    fileprivate func startIdleWait(_ context: ChannelHandlerContext) {
        guard let idleTimeout else { return }
        scheduleIdleCheck(context, at: .now() + idleTimeout)
    }
}

@available(*, unavailable)
extension FastLaneHandler: Sendable {}
