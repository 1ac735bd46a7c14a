import Hummingbird

/// Turns errors on page routes into pages a person understands, never a stack trace. Image,
/// event and API routes keep their short JSON errors.
struct ErrorPageMiddleware<Context: RequestContext>: RouterMiddleware {
    let services: AppServices

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let path = request.uri.path
            let api = ["/thumbs/", "/large/", "/events", "/metrics", "/stats", "/health"].contains { path.hasPrefix($0) }
            guard !api else { throw error }
            let httpError = error as? HTTPError
            let status = httpError?.status ?? .internalServerError
            let message = httpError?.body ?? "Something went wrong on our side. Try again; if it keeps happening, check the app's log."
            let page = await services.render("error", [
                "title": status.reasonPhrase,
                "heading": status == .notFound ? "Not found" : status.reasonPhrase,
                "message": message,
                "retry": false,
            ])
            return PageController<Context>.html(page, status: status)
        }
    }
}
