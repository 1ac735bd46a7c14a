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

/// Counts every answered request by route and status, errors included.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: GalleryMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let route = Self.route(request.uri.path)
        do {
            let response = try await next(request, context)
            metrics.request(route: route, status: response.status.code)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            metrics.request(route: route, status: status)
            throw error
        }
    }

    /// A fixed set of labels, so hostile paths cannot blow up the metrics' cardinality.
    static func route(_ path: String) -> String {
        switch path {
        case "/gallery/images", "/gallery/image", "/health", "/metrics": path
        default: "other"
        }
    }
}
