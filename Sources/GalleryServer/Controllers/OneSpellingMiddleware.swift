import FastLane
import Hummingbird

/// One spelling per route: a path with an empty segment (`//gallery/images`), a trailing slash
/// (`/gallery/images/`) or a dot segment (`/gallery/./images`) is answered 404 as a path no route
/// has, never with the route (Hummingbird's router skips empty segments) and never with a
/// redirect (``FastLane/hasOneSpelling(_:)``, which the fast lane applies too). It reads the
/// request's target as sent (after `RequestHeadCheck`): `//gallery/images` parses as an
/// authority.
struct OneSpellingMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard FastLane.hasOneSpelling(request.head.path ?? "/") else { throw HTTPError(.notFound) }
        return try await next(request, context)
    }
}
