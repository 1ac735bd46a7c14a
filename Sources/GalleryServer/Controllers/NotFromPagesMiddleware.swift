import HTTPTypes
import Hummingbird

/// Refuses, with 403 and the reason, every request a web page sends to the gallery's test routes
/// (`/gallery/test/`): they hold and release image requests and publish new art, which no page
/// may do, of any site, not even one at a name rebound to the gallery's address.
///
/// A page's request says so: it carries `Origin`, or `Sec-Fetch-Site` with any value but `none`
/// (what a browser sends for an address typed by hand). The tests and scripts that drive these
/// routes send neither, and pass.
struct NotFromPagesMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let reason = Self.pageReason(request) {
            throw HTTPError(.forbidden, message: "The gallery's test routes answer no web page, and \(reason). Nothing was changed: "
                + "send the request from a script or a test client, without Origin and Sec-Fetch-Site.")
        }
        return try await next(request, context)
    }

    /// Why `request` was sent by a web page, or `nil` when it was not.
    static func pageReason(_ request: Request) -> String? {
        if let origin = request.headers[.origin] {
            return "this request was sent by a page at \(origin)"
        }
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "none" {
            return "your browser says a page sent this request (Sec-Fetch-Site: \(site))"
        }
        return nil
    }
}
