import Hummingbird

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
