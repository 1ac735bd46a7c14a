import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The lane on one connection: after Hummingbird's connection-state handler (which so sees
/// every request and every answer, the lane's included: its idle time-out, keep-alive and
/// graceful shutdown count them) and before the async channel Hummingbird reads requests from.
final class FastLaneHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

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

    init(_ lane: FastLane) {
        self.lane = lane
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(request):
            if passedOn == 0, !passingEverything, context.channel.isWritable, Self.isPlain(request),
               let answer = lane.respond(request) {
                reading = .answered
                write(answer, for: request, context: context)
            } else {
                if let connection = request.headerFields[.connection], connection.lowercased().contains("close") {
                    passingEverything = true
                }
                passedOn += 1
                reading = .passing
                context.fireChannelRead(data)
            }
        case .body:
            if reading != .answered { context.fireChannelRead(data) }
        case .end:
            if reading != .answered { context.fireChannelRead(data) }
            reading = .idle
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    /// Hummingbird's answers: each end is the end of the oldest request passed on.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), passedOn > 0 { passedOn -= 1 }
        context.write(data, promise: promise)
    }

    /// A `GET` or `HEAD` without a body, `Expect` or `Connection`: what the lane may answer.
    static func isPlain(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let fields = request.headerFields
        if let length = fields[.contentLength], length != "0" { return false }
        return fields[.transferEncoding] == nil && fields[.expect] == nil && fields[.connection] == nil
    }

    private func write(_ answer: FastLane.Answer, for request: HTTPRequest, context: ChannelHandlerContext) {
        var fields = answer.headerFields
        if !fields.contains(.contentLength) { fields[.contentLength] = String(answer.body.readableBytes) }
        fields[.date] = lane.date.value
        if let serverName = lane.serverName { fields[.server] = serverName }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: answer.status, headerFields: fields))), promise: nil)
        if request.method != .head, answer.body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(answer.body)), promise: nil)
        }
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        needsFlush = true
        lane.answers.count.add(1, ordering: .relaxed)
    }
}

@available(*, unavailable)
extension FastLaneHandler: Sendable {}
