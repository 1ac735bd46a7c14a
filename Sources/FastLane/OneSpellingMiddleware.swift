public import Hummingbird

/// One spelling per route: a path with an empty segment (`//stats`), a trailing slash
/// (`/stats/`) or a dot segment (`/metrics/.`) is answered as a path no route has, never with
/// the route (Hummingbird's router skips empty segments) and never with a redirect
/// (``FastLane/hasOneSpelling(_:)``, which the fast lane applies too). The app's and the
/// gallery's: added before the routes, so it wraps every route and the router's answer for an
/// unknown path.
public struct OneSpellingMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The answer to a misspelt path.
    let notFound: @Sendable (Request, Context) async throws -> Response

    /// Creates the middleware.
    /// - Parameter notFound: the answer to a misspelt path; by default it throws
    ///   `HTTPError(.notFound)`, as the router answers a path no route has. The app passes its
    ///   error page.
    public init(notFound: @escaping @Sendable (Request, Context) async throws -> Response = { _, _ in throw HTTPError(.notFound) }) {
        self.notFound = notFound
    }

    /// `next`'s answer for a path in its one spelling, else `notFound`'s.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard FastLane.hasOneSpelling(request.head.path ?? "/") else { return try await notFound(request, context) }
        return try await next(request, context)
    }
}
