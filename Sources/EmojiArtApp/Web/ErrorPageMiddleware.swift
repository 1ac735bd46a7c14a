import Hummingbird

/// Turns errors into pages a person understands, never a stack trace. It is added to the routes
/// it serves: the pages' (`PageController.endpoints`) and the router's answer for a request no
/// route matches, whatever its path or method (`buildRouterAndServices`). The image, event and
/// API routes' own errors stay short JSON.
struct ErrorPageMiddleware<Context: RequestContext>: RouterMiddleware {
    let services: AppServices

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
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
