import FastLane
import Hummingbird

/// One spelling per route: a path with an empty segment (`//stats`), a trailing slash
/// (`/stats/`) or a dot segment (`/metrics/.`) is answered 404 with the page of a path no route
/// has, never with the route (Hummingbird's router skips empty segments) and never with a
/// redirect (``FastLane/hasOneSpelling(_:)``, which the fast lane applies too). Added right after
/// ``BrowserGuardMiddleware``, so it wraps every route and the router's answer for an unknown
/// path. It reads the request's target as sent (after `RequestHeadCheck`), not the parsed path:
/// `//stats` parses as an authority, with the path `/`.
struct OneSpellingMiddleware<Context: RequestContext>: RouterMiddleware {
    let services: AppServices

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !FastLane.hasOneSpelling(request.head.path ?? "/") else { return try await next(request, context) }
        // The router's own answer for a path no route has, as ErrorPageMiddleware makes it.
        return try await ErrorPageMiddleware(services: services).handle(request, context: context) { _, _ in
            throw HTTPError(.notFound)
        }
    }
}
