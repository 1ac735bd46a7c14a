import Hummingbird
import Logging

/// Adds `X-Content-Type-Options: nosniff` to every answer, errors included (converted here, as
/// Hummingbird would): a client must take an answer's `Content-Type` as given, never guess it from
/// the bytes. The image heads the fast lane sends carry it too (see
/// `GalleryController.imageFields(_:edition:)`), in the same place.
struct NoSniffMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
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
