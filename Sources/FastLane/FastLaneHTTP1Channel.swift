public import HummingbirdCore
public import Logging
public import NIOCore
import NIOHTTP1
public import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1.1 child channel with a ``FastLane`` in it: the same pipeline as
/// `HTTP1Channel` (NIO's HTTP/1 codec, the HTTP types codec, Hummingbird's connection-state
/// handler, the async channel Hummingbird reads requests from), with the lane right after NIO's
/// decoder (and the decoder not paired with the encoder: see ``FastLane``). Right after the
/// decoder, lane or not, RFC 9112's rules for `Host` hold (`RequestHeadCheck`): an HTTP/1.1 request
/// without one, or with two, is answered 400, and a request in absolute form goes on in origin form
/// with its target's host. The lane, or without it `ConnectionEndHandler`, tells when the client
/// closes the connection (``connectionEnd``). Lane or not, the server's ``ConnectionLimits`` hold
/// (``ConnectionGuard``): a connection past the most open is closed as soon as it is accepted, a
/// request must arrive whole within its deadline and an answer's bytes be taken within theirs
/// (`ClientDeadlines`, first in the pipeline), and a request with a body is answered 413
/// (`BodyRefusal`, where Hummingbird's request loop would read it). Without a lane it is otherwise
/// `HTTP1Channel`'s pipeline.
public struct FastLaneHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    /// One accepted connection: the async channel Hummingbird reads requests from and writes
    /// answers to, and what the lane hands on with the requests it passes.
    public struct Connection: ServerChildChannelValue {
        /// The async channel of Hummingbird's request loop.
        public let asyncChannel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
        /// Completes when the client closes the connection or its input (``connectionEnd``).
        let end: EventLoopFuture<Void>

        /// The connection's channel.
        public var channel: any Channel { asyncChannel.channel }
    }

    /// One accepted connection.
    public typealias Value = Connection

    /// The responder Hummingbird's request loop calls: the routes', everything the lane passes
    /// on.
    public private(set) var responder: HTTPChannelHandler.Responder
    /// The lane; `nil` runs Hummingbird alone.
    public let lane: FastLane?
    /// Time before an idle connection is closed; `nil` never.
    public let idleTimeout: TimeAmount?
    /// The server's limits on its connections, and their count (``ConnectionGuard``).
    public let connections: ConnectionGuard
    /// Handlers on NIO's HTTP/1 request and response parts, behind the lane: they see the requests
    /// the lane passes on and their answers, never the lane's own (as Hummingbird's
    /// `HTTP1Channel.Configuration.additionalChannelHandlers`, e.g. a response compressor).
    public let additionalChannelHandlers: @Sendable () -> [any RemovableChannelHandler]

    /// Creates the channel.
    public init(
        responder: @escaping HTTPChannelHandler.Responder, lane: FastLane?, idleTimeout: TimeAmount? = nil,
        connections: ConnectionGuard = ConnectionGuard(),
        additionalChannelHandlers: @escaping @Sendable () -> [any RemovableChannelHandler] = { [] }
    ) {
        self.responder = responder
        self.lane = lane
        self.idleTimeout = idleTimeout
        self.connections = connections
        self.additionalChannelHandlers = additionalChannelHandlers
    }

    /// Builds the pipeline of an accepted connection.
    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // Hummingbird's own limits and settings (HTTP1Channel.Configuration's defaults).
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = 80 * 1024
            limits.maxHeaderListSize = 80 * 1024
            limits.maxHeaderFieldCount = 1000
            let pipeline = channel.pipeline.syncOperations
            let end = channel.eventLoop.makePromise(of: Void.self)
            channel.closeFuture.whenComplete { _ in end.succeed() }
            // Past the most connections, closed at once (after the pipeline is built: Hummingbird's
            // request loop then finds it closed and ends).
            let admitted = connections.admit(channel)
            let deadlines = ClientDeadlines(connections)
            try pipeline.addHandler(deadlines)
            if let lane {
                // NIO's encoder and decoder as `configureHTTPServerPipeline` adds them, but not
                // paired: the lane writes its answers past the encoder, and itself keeps answers to
                // `HEAD` and `CONNECT` bodiless, which the pairing did. The lane first, on NIO's own
                // request parts: the fewest steps for an answer from memory. It keeps the idle
                // time-out, which only it can count right.
                try pipeline.addHandlers([
                    HTTPResponseEncoder(configuration: .init()),
                    ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, limitConfiguration: limits)),
                    RequestHeadCheck(),
                    RequestEndWatch(deadlines),
                    FastLaneHandler(lane, idleTimeout: idleTimeout, end: end),
                ])
            } else {
                try pipeline.configureHTTPServerPipeline(
                    withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                    withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits
                )
                try pipeline.addHandler(RequestHeadCheck())
                try pipeline.addHandler(RequestEndWatch(deadlines))
                // Without the lane, which tells the client's close itself, a handler for it alone.
                try pipeline.addHandler(ConnectionEndHandler(end))
            }
            try pipeline.addHandler(BodyRefusal(connections))
            try pipeline.addHandlers(additionalChannelHandlers())
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            let stateTimeout = lane == nil ? idleTimeout.map { Duration($0) } : nil
            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: stateTimeout, logger: logger))
            let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true)
            )
            if !admitted { channel.close(promise: nil) }
            return Connection(asyncChannel: asyncChannel, end: end.futureResult)
        }
    }

    /// Serves the connection's passed-on requests with Hummingbird's request loop, with the
    /// connection's end and its peer bound (``connectionEnd``, ``clientAddress``).
    public func handle(value connection: Value, logger: Logger) async {
        await Self.$connectionEnd.withValue(connection.end) {
            await Self.$clientAddress.withValue(connection.channel.remoteAddress) {
                await serve(connection, logger: logger)
            }
        }
    }

    private func serve(_ connection: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: connection.asyncChannel, logger: logger)
    }
}

extension FastLaneHTTP1Channel {
    /// The end of the connection whose requests the current task serves: completes when the
    /// client closes the connection or its input, or the channel closes. A long answer (an event
    /// stream) ends on it at once; otherwise only its next write would find the client gone. `nil`
    /// outside a connection of this channel (a router test).
    @TaskLocal public static var connectionEnd: EventLoopFuture<Void>?

    /// The peer address of the connection whose requests the current task serves; `nil` outside
    /// a connection of this channel (a router test).
    @TaskLocal public static var clientAddress: SocketAddress?
}

/// Completes `end` when the client closes its side of the connection (NIO's `inputClosed`:
/// Hummingbird's child channels allow half-closure, so the channel itself stays open until its
/// answer is done, which for an event stream is never), and passes every event on. In a pipeline
/// without a lane only: `FastLaneHandler` does the same where there is one. The channel's close
/// completes `end` too.
final class ConnectionEndHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let end: EventLoopPromise<Void>

    init(_ end: EventLoopPromise<Void>) { self.end = end }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed? = event as? ChannelEvent { end.succeed() }
        context.fireUserInboundEventTriggered(event)
    }
}

extension HTTPServerBuilder {
    /// An HTTP/1.1 server with `lane` in front of the responder (``FastLaneHTTP1Channel``); with no
    /// lane, Hummingbird's own HTTP/1.1 pipeline with RFC 9112's `Host` rules.
    /// - Parameter additionalChannelHandlers: handlers on NIO's HTTP/1 parts of what the router
    ///   answers, behind the lane, which they never see. (Hummingbird's own
    ///   `additionalChannelHandlers` sit after its HTTP types codec and see other parts.)
    public static func http1(
        fastLane lane: FastLane?, idleTimeout: TimeAmount? = nil, connections: ConnectionGuard = ConnectionGuard(),
        additionalChannelHandlers: (@Sendable () -> [any RemovableChannelHandler])? = nil
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            FastLaneHTTP1Channel(
                responder: responder, lane: lane, idleTimeout: idleTimeout, connections: connections,
                additionalChannelHandlers: additionalChannelHandlers ?? { [] }
            )
        }
    }
}
