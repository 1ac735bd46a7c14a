import FastLane
import Foundation
public import Hummingbird
public import Logging
import MessageSignatures

/// The gallery ("book server") as a Hummingbird application.
public enum Gallery {
    /// Builds the gallery: renders the art (once per process), then the router.
    /// - Parameters:
    ///   - onServerRunning: called with the bound port once the server listens.
    /// - Throws: `Imaging.Error` when the art cannot be rendered.
    public static func buildApplication(
        _ configuration: GalleryConfiguration,
        logger: Logger = Logger(label: "gallery"),
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws -> GalleryApplication {
        let art = try await ArtStore.load(configuration.catalog)
        let metrics = GalleryMetrics(catalog: configuration.catalog)
        metrics.rendered(in: art.renderTime)
        logger.info("rendered \(art.pieces.count) pieces in \(art.renderTime)")
        logger.info("the feed is signed with key \(configuration.keyFingerprint) (Ed25519, published at /gallery/key)")
        if configuration.faults.isActive {
            logger.warning("fault injection on: \(configuration.faults)")
        }
        if configuration.publicOrigin == nil, ["0.0.0.0", "::", "[::]"].contains(configuration.host) {
            // The feed names the bound address, which no app asks for: every app would refuse it.
            logger.warning("bound to every address (\(configuration.host)), the feed names its origin as that: pass --public-origin with the URL apps use (apps refuse a feed naming another gallery)")
        }
        if configuration.imageGate != nil {
            logger.warning("image requests are held until released through /gallery/test/ (--hold-images)")
        }
        if let interval = configuration.revisionInterval {
            logger.warning(interval == .zero
                ? "revisions on request: POST /gallery/test/revise publishes new art"
                : "a revision every \(interval) (and on POST /gallery/test/revise)")
        }
        let publication = try Publication(art: art, seed: configuration.seed, now: configuration.now)
        let (router, gallery) = try buildRouterAndController(configuration, publication: publication, metrics: metrics)
        let origin = gallery.signer.origin
        let serverName = "EmojiArt-Gallery"
        let laneIsSafe = !configuration.faults.isActive && configuration.imageGate == nil
        let lane = configuration.fastLane && laneIsSafe
            ? FastLane(serverName: serverName, now: configuration.now, respond: gallery.fastLane) : nil
        return GalleryApplication(
            responder: router.buildResponder(),
            server: .http1(
                fastLane: lane, idleTimeout: configuration.idleTimeout,
                connections: ConnectionGuard(
                    ConnectionLimits(requestTimeout: configuration.requestTimeout, sendTimeout: configuration.requestTimeout, maxConnections: configuration.maxConnections),
                    counted: { metrics.connectionCut($0) }
                )
            ),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
            logger: logger, now: configuration.now,
            running: { port in
                // Port 0 is picked at bind: the feed names the address it is served at.
                origin.bound(host: configuration.host, port: port)
                await onServerRunning(port)
            },
            revisions: configuration.revisionInterval.flatMap { $0 > .zero ? ($0, configuration.clock, publication) : nil }
        )
    }

    /// Builds the router: `/gallery/images` (signed), `/gallery/image?N`, `/gallery/key`,
    /// `/health`, `/metrics`, the gate's `/gallery/test/` routes when
    /// ``GalleryConfiguration/imageGate`` is set, and `POST /gallery/test/revise` when
    /// ``GalleryConfiguration/revisionInterval`` is.
    public static func buildRouter(
        _ configuration: GalleryConfiguration, publication: Publication, metrics: GalleryMetrics
    ) throws -> Router<BasicRequestContext> {
        try buildRouterAndController(configuration, publication: publication, metrics: metrics).router
    }

    static func buildRouterAndController(
        _ configuration: GalleryConfiguration, publication: Publication, metrics: GalleryMetrics
    ) throws -> (router: Router<BasicRequestContext>, gallery: GalleryController<BasicRequestContext>) {
        let router = Router(context: BasicRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.middlewares.add(NoSniffMiddleware())
        router.middlewares.add(RequestMetricsMiddleware(metrics: metrics))
        router.middlewares.add(OneSpellingMiddleware())  // `/gallery/images/`, `//health`: 404
        let gallery = try GalleryController<BasicRequestContext>(
            publication: publication, metrics: metrics, faults: FaultInjector(configuration.faults),
            gate: configuration.imageGate, clock: configuration.clock, cacheControl: configuration.cacheControl,
            signer: FeedSigner(
                key: configuration.signingKey, lifetime: configuration.signatureLifetime,
                origin: GalleryOrigin(configured: configuration.publicOrigin, host: configuration.host, port: configuration.port),
                now: configuration.now
            )
        )
        router.addRoutes(gallery.endpoints, atPath: "/gallery")
        if let gate = configuration.imageGate {
            router.addRoutes(GateController<BasicRequestContext>(gate: gate).endpoints, atPath: "/gallery/test")
        }
        if configuration.revisionInterval != nil {
            router.addRoutes(RevisionController<BasicRequestContext>(publication: publication).endpoints, atPath: "/gallery/test")
        }
        router.addRoutes(OpsController(metrics: metrics, pieces: configuration.catalog.served.count).endpoints)
        return (router, gallery)
    }
}
