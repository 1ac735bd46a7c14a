import Hummingbird

/// `GET /health` and `GET /metrics`.
struct OpsController<Context: RequestContext>: Sendable {
    let metrics: GalleryMetrics
    let pieces: Int

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("health") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: "{\"status\":\"ok\",\"pieces\":\(pieces)}"))
            )
        }
        routes.get("metrics") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: metrics.exposition())
            )
        }
        return routes
    }
}

