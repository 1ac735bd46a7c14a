import HTTPTypes
public import Hummingbird
import Logging

/// Turns what the routes it wraps throw into answers, and says `X-Content-Type-Options: nosniff`
/// on every answer, errors included: a client must take an answer's `Content-Type` as given,
/// never guess it from the bytes. The app's and the gallery's outermost middleware, so an error
/// thrown past the others is answered here too.
///
/// An error that says its own answer (`HTTPResponseError`, such as `HTTPError`) is answered with
/// it, as Hummingbird would; any other is logged and answered 500 with an empty body. The heads
/// the fast lane sends carry the field too, where this adds it (last), so the lane's answers
/// read as the router's.
public struct NoSniffMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Creates the middleware.
    public init() {}

    /// The answer of `next`, or of what it threw, with `nosniff`.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            context.logger.error("unhandled error: \(error)")
            response = Response(status: .internalServerError, headers: [.contentLength: "0"])
        }
        response.headers[.xContentTypeOptions] = "nosniff"
        return response
    }
}
