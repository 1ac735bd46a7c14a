import HTTPTypes
import Hummingbird

/// The rules every request meets before a route sees it; just inside `NoSniffMiddleware`, the
/// outermost middleware, which answers the errors thrown past this one and says `nosniff` on
/// every answer, this one's refusals included.
///
/// - A `Host` that is not a name the app serves (see ``AllowedHosts``) is answered 421, on every
///   route: a page at a name rebound to the app's address can neither read nor change it.
/// - A state-changing request (any method but `GET`, `HEAD` and `OPTIONS`) is refused with 403 and
///   a page that says why when it comes from another site's page (OWASP's Fetch Metadata rule):
///   `Sec-Fetch-Site` present and neither `same-origin` nor `none`, or `Origin` present and not
///   the origin of the request's own `Host`. A request with neither field is not from a browser
///   (`emojiart cache clear --app URL`, `curl`) and passes.
///
/// Every answer says `X-Content-Type-Options: nosniff` (from `NoSniffMiddleware`): an image's
/// content type comes from the disk entry and must never be guessed from its bytes. Pages add
/// their policies themselves (``PageController/html(_:status:)``); the fast lane's prepared
/// heads carry `nosniff` too.
struct BrowserGuardMiddleware<Context: RequestContext>: RouterMiddleware {
    let services: AppServices

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let authority = request.head.authority, !services.allowedHosts.allows(host: authority.utf8[...]) {
            services.metrics.refused(.foreignHost)
            return Self.misdirected(authority)
        }
        if !Self.isSafe(request.method), let reason = Self.crossSiteReason(request) {
            services.metrics.refused(.crossSite)
            let page = await services.render("error", [
                "title": "Refused",
                "heading": "Refused: this request came from another site",
                "message": "The app changes its caches only when asked from its own pages, and \(reason). Nothing was changed. "
                    + "To clear a cache, press the button on the app's own page; from a script, send the request without "
                    + "Origin and Sec-Fetch-Site (as emojiart cache clear --app URL does).",
                "retry": false,
            ])
            return PageController<Context>.html(page, status: .forbidden)
        }
        return try await next(request, context)
    }

    /// Whether `method` changes nothing (`GET`, `HEAD`, `OPTIONS`): any page may send it.
    static func isSafe(_ method: HTTPRequest.Method) -> Bool {
        method == .get || method == .head || method == .options
    }

    /// Why `request` is from another site's page, or `nil` when it is from the app's own pages
    /// or not from a browser.
    static func crossSiteReason(_ request: Request) -> String? {
        if let site = request.headers[.secFetchSite], site != "same-origin", site != "none" {
            return "your browser says it was sent by a page of another site (Sec-Fetch-Site: \(site))"
        }
        if let origin = request.headers[.origin] {
            guard let authority = request.head.authority, AllowedHosts.isSameOrigin(origin[...], as: authority[...]) else {
                return "it was sent by a page at \(origin), not by the app's own pages"
            }
        }
        return nil
    }

    /// 421 Misdirected Request for a `Host` the app does not serve.
    static func misdirected(_ authority: String) -> Response {
        Response(
            status: .misdirectedRequest,
            headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string:
                "This app does not answer to the host name in this request (\(authority)). Open it at its own address, "
                    + "or start it with --allowed-host NAME for each name people use to reach it.\n"
            ))
        )
    }
}

extension HTTPField.Name {
    /// `Sec-Fetch-Site`: which site's page sent the request, as the browser tells it.
    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    /// `Referrer-Policy`.
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}
