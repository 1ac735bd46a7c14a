import FastLane
import ImageService
public import Hummingbird
public import ImageCache
import Imaging
public import Logging
import NIOCore

/// The EmojiArt web app as a Hummingbird application.
public enum EmojiArtApp {
    /// Builds the app and starts loading and verifying the feed in the background.
    /// - Parameters:
    ///   - pipeline: the cache every image goes through; it is set up here.
    ///   - onServerRunning: called with the bound port once the server listens.
    public static func buildApplication(
        _ configuration: AppConfiguration,
        pipeline: ImagePipeline,
        logger: Logger = Logger(label: "emojiart"),
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws -> some ApplicationProtocol {
        await pipeline.setUp()
        await configuration.imageService?.pipeline.setUp()
        let model = EmojiArtModel(
            galleryURL: configuration.galleryURL, pipeline: pipeline, concurrency: configuration.concurrency,
            trust: configuration.trust, offline: configuration.offline, galleryOrigin: configuration.galleryOrigin,
            feedCheckInterval: configuration.feedCheckInterval, logger: logger
        )
        let (router, services) = try buildRouterAndServices(configuration, model: model, pipeline: pipeline)
        await model.start()
        let serverName = "EmojiArt"
        let images = ImageController<BasicRequestContext>(services: services).fastLane
        // The image service's memory hits too, behind the same `Host` check as the routes'.
        let respond: FastLane.Responder = if let service = configuration.imageService?.fastLane {
            { [allowedHosts = services.allowedHosts] request in
                if let answer = images(request) { return answer }
                if let host = request.firstValue(of: "Host"), !allowedHosts.allows(host: host.utf8[...]) { return nil }
                return service(request)
            }
        } else {
            images
        }
        let lane = configuration.fastLane ? FastLane(serverName: serverName, respond: respond) : nil
        var compression: (@Sendable () -> [any RemovableChannelHandler])?
        if configuration.compression { compression = { @Sendable in TextCompression.handlers() } }
        return Application(
            router: router,
            server: .http1(
                fastLane: lane, idleTimeout: configuration.idleTimeout,
                connections: ConnectionGuard(
                    ConnectionLimits(requestTimeout: configuration.requestTimeout, sendTimeout: configuration.requestTimeout, maxConnections: configuration.maxConnections),
                    counted: { [metrics = services.metrics] in metrics.connectionCut($0) }
                ),
                additionalChannelHandlers: compression
            ),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
            services: services.backgroundServices,
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
            logger: logger
        )
    }

    /// Builds the router: pages, images, events, actions, health and metrics. Its last
    /// middleware turns errors into pages (for a request no route matches), so a route added
    /// to it afterwards answers its errors as pages too.
    public static func buildRouter(
        _ configuration: AppConfiguration, model: EmojiArtModel, pipeline: ImagePipeline
    ) throws -> Router<BasicRequestContext> {
        try buildRouterAndServices(configuration, model: model, pipeline: pipeline).router
    }

    static func buildRouterAndServices(
        _ configuration: AppConfiguration, model: EmojiArtModel, pipeline: ImagePipeline
    ) throws -> (router: Router<BasicRequestContext>, services: AppServices) {
        // Only formats this libvips can write (AVIF needs libheif's AV1 encoder).
        let formats = configuration.formats.filter { Imaging().canEncode($0.output) }
        let encoder = ImagePrefetcher(pipeline: pipeline, destination: .memoryCache, priority: .veryLow)
        let warmer = ImagePrefetcher(pipeline: pipeline, destination: .memoryCache, priority: .veryLow)
        let warmUp = WarmUp.initial(budget: configuration.warmUpBudget)
        let services = AppServices(
            model: model,
            pipeline: pipeline,
            templates: try Templates.library(),
            processors: AppServices.processors(boxes: configuration.boxes, formats: formats),
            boxes: configuration.boxes,
            formats: formats,
            metrics: AppMetrics(),
            prefetcher: ImagePrefetcher(pipeline: pipeline),
            encoder: encoder,
            warmer: warmer,
            warmUp: warmUp,
            warmUpBudget: configuration.warmUpBudget,
            warmUpPixelBudget: configuration.warmUpPixelBudget,
            warmUpMaxSourcePixels: configuration.warmUpMaxSourcePixels,
            warmUpInterval: configuration.feedCheckInterval,
            statsBroadcast: StatsBroadcast { AppStats.now(pipeline: pipeline, encoder: encoder, warmer: warmer, warmUp: warmUp) },
            eventStreams: EventStreamSlots(limit: configuration.maxEventStreams, perClient: configuration.maxEventStreamsPerClient),
            clientAddressFromEdge: configuration.clientAddressFromEdge,
            eventStreamHeartbeat: configuration.eventStreamHeartbeat,
            eventStreamLifetime: configuration.eventStreamLifetime,
            httpCache: configuration.httpCache,
            instanceName: configuration.instanceName,
            allowedHosts: AllowedHosts(bound: configuration.host, extra: configuration.allowedHosts),
            imageService: configuration.imageService
        )
        let router = Router(context: BasicRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.middlewares.add(NoSniffMiddleware())  // outermost: errors answered, `nosniff` on every answer
        router.middlewares.add(BrowserGuardMiddleware(services: services))
        // Before the one-spelling rule: an imgproxy path holds its source's `//` (`/plain/http://`),
        // and is checked whole by its signature instead.
        if let imageService = configuration.imageService {
            router.addRoutes(ImageServiceController(server: imageService).endpoints)
        }
        // `/stats/`, `//stats`: the page of a path no route has, as ErrorPageMiddleware makes it.
        router.middlewares.add(OneSpellingMiddleware { [services] request, context in
            try await ErrorPageMiddleware(services: services).handle(request, context: context) { _, _ in throw HTTPError(.notFound) }
        })
        router.addRoutes(PageController(services: services).endpoints)  // with its error pages
        router.addRoutes(ImageController(services: services).endpoints)
        router.addRoutes(EventsController(services: services).endpoints)
        router.addRoutes(OpsController(services: services).endpoints)
        router.addRoutes(AssetsController<BasicRequestContext>().endpoints)
        // A path no route knows is answered with an error page too. A router's middleware wraps
        // only the routes added after it, and its answer for an unknown path: added last, this
        // one reaches that answer alone.
        router.middlewares.add(ErrorPageMiddleware(services: services))
        return (router, services)
    }
}
