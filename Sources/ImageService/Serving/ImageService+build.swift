public import FastLane
public import Hummingbird
public import Logging
import ImageCache
import NIOCore

extension ImageService {
    /// How a server of the service alone runs: its address and its connections' limits.
    public struct ServerConfiguration: Sendable {
        /// Address to bind; loopback by default.
        public var host: String
        /// Port to bind; 0 picks a free one.
        public var port: Int
        /// How long a connection may stay quiet before it is closed; `nil` never.
        public var idleTimeout: TimeAmount?
        /// The limits every connection is held to (request time, send time, how many at once).
        public var connections: ConnectionLimits

        /// A server configuration.
        public init(host: String = "127.0.0.1", port: Int = 8080, idleTimeout: TimeAmount? = .seconds(75), connections: ConnectionLimits = ConnectionLimits()) {
            self.host = host
            self.port = port
            self.idleTimeout = idleTimeout
            self.connections = connections
        }
    }

    /// The service's router: `GET /health`, `GET /metrics` (Prometheus) and every other path as an
    /// imgproxy URL (``ImageServiceController``); `HEAD` answered as `GET`.
    public static func buildRouter(_ server: ImageServer) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.middlewares.add(NoSniffMiddleware())
        router.get("health") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{\"status\":\"ok\"}")))
        }
        router.get("metrics") { _, _ in
            let text = server.metrics.exposition(await server.pipeline.stats())
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        router.addRoutes(ImageServiceController(server: server).endpoints)
        return router
    }

    /// A server of the service alone, over HTTP/1.1, memory hits answered on the event loop
    /// (``ImageServer/fastLane``): its pipeline is set up first.
    public static func buildApplication(
        _ server: ImageServer, configuration: ServerConfiguration, logger: Logger = Logger(label: "image-service"),
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async -> some ApplicationProtocol {
        await server.pipeline.setUp()
        let serverName = "EmojiArt-ImageService"
        return Application(
            router: buildRouter(server),
            server: .http1(
                fastLane: FastLane(serverName: serverName, respond: server.fastLane), idleTimeout: configuration.idleTimeout,
                connections: ConnectionGuard(configuration.connections)
            ),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
            logger: logger
        )
    }
}
