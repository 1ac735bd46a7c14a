import Foundation
import Hummingbird
import ImageCache
import GalleryFeed
import HTTPCaching
import Imaging

/// The HTML pages: loading (live progress), the catalog, details, and the cache actions.
struct PageController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        // A person reads these answers: an error is a page, never a stack trace.
        let routes = RouteCollection(context: Context.self).add(middleware: ErrorPageMiddleware(services: services))
        routes.get("/", use: home)
        routes.get("pieces/:index", use: details)
        routes.post("cache/clear-memory") { request, _ in
            await services.database.clearMemory()
            return Self.back(request)
        }
        routes.post("cache/clear-disk") { request, _ in
            await services.database.clear()
            services.forgetPrefetches()
            return Self.back(request)
        }
        routes.post("retry") { _, _ in
            await services.model.start(retryingFailures: true)
            return Response(status: .seeOther, headers: [.location: "/"])
        }
        return routes
    }

    @Sendable func home(_ request: Request, context: Context) async throws -> Response {
        // Loading the catalog asks whether the feed changed (a 304 when it did not): new art
        // is verified and shown without a restart.
        if services.model.phase.value == .ready { await services.model.refreshIfFeedChanged() }
        switch services.model.phase.value {
        case .idle, .loadingFeed, .verifying:
            let progress = services.model.progress.value
            let page = await services.render("loading", [
                "title": "Verifying",
                "phaseText": Self.text(of: services.model.phase.value),
                "progress": ["total": progress.total, "completed": progress.completed],
            ])
            return Self.html(page)
        case let .failed(message):
            let refused = services.model.feedRefusal.value != nil
            let page = await services.render("error", [
                "title": refused ? "Feed not authentic" : "Gallery unavailable",
                "heading": refused ? "The gallery's feed could not be authenticated" : "The gallery is not answering",
                "message": message, "retry": true,
            ])
            return Self.html(page, status: refused ? .badGateway : .serviceUnavailable)
        case .ready:
            let entries = await services.model.entries
            let progress = services.model.progress.value
            let cards: [[String: Any]] = entries.enumerated().map { index, entry in
                var card = card(index: index, file: entry.file, status: entry.status)
                // The browser's own order of loading, stated: the first row at once and first,
                // the rest of the first screen at once, what is below it when scrolled to.
                card["firstRow"] = index < Self.firstRow
                card["belowFirstScreen"] = index >= Self.firstScreen
                return card
            }
            var context: [String: Any] = [
                "title": "Catalog", "cards": cards, "summary": Self.summary(progress),
                "feedKey": services.model.feedKey.value?.fingerprint ?? "",
                "feedKeyText": Self.feedKeyText(services.model.feedOrigin.value),
            ]
            if let notice = Self.notice(services.model.feedOrigin.value) { context["notice"] = notice }
            // How old the feed is, on the model's clock: "as of ..." once its prices are stale.
            if let age = services.model.feedAge.value {
                let now = services.model.now()
                context["feedAge"] = age.text(at: now)
                context["feedAgeClass"] = age.isStale(at: now) ? "notice" : "summary"
            }
            // The details variants of what is shown, ahead of a click, at low priority: after
            // every thumbnail and verification, and refused first when the queues are full.
            let pieces = Set(entries.filter { $0.status == .verified }.compactMap(\.file.pieceNumber))
            // In the format this browser's image requests will name: its page request's
            // `Accept` lists the image formats it takes too (Chromium's does; one that names
            // none gets the PNGs).
            services.prefetchDetails(of: pieces.sorted(), format: services.format(accept: request.headers[.accept]))
            let page = await services.render("list", context)
            return Self.html(page)
        }
    }

    @Sendable func details(_ request: Request, context: Context) async throws -> Response {
        guard let index = context.parameters.get("index", as: Int.self),
              let entry = await services.model.entry(at: index)
        else {
            throw HTTPError(.notFound, message: "There is no piece with that number in the catalog.")
        }
        // The person opened it: its details image, if still being prefetched, comes first now.
        let kind = VariantKind(route: .large, density: 1, format: services.format(accept: request.headers[.accept]))
        if let piece = entry.file.pieceNumber, let large = services.variant(piece: piece, kind: kind)?.request {
            services.prefetcher.setPriority(.high, for: [large])
        }
        var page = card(index: index, file: entry.file, status: entry.status)
        page["title"] = entry.file.name
        page["explanation"] = entry.status.explanation
        page["url"] = entry.file.url
        return Self.html(await services.render("details", page))
    }

    /// How many cards the first row of the catalog holds, and the first screen, in a window
    /// 1400 px wide and 1000 px high (cards at least 180 px wide, about 270 px high): the first
    /// row is fetched first, and what is below the first screen only when scrolled to.
    static var firstRow: Int { 7 }
    static var firstScreen: Int { 21 }

    /// A card's template values, with its image URLs (1x and 2x) in this ``HTTPCacheMode``.
    func card(index: Int, file: ImageFile, status: VerificationStatus) -> [String: Any] {
        var card = Self.card(index: index, file: file, status: status)
        card["thumbURL"] = services.url(file, route: .thumbs, density: 1)
        card["thumb2xURL"] = services.url(file, route: .thumbs, density: 2)
        card["largeURL"] = services.url(file, route: .large, density: 1)
        card["large2xURL"] = services.url(file, route: .large, density: 2)
        let (thumb, large) = (artSize(in: .thumbs), artSize(in: .large))
        card["thumbWidth"] = thumb.width
        card["thumbHeight"] = thumb.height
        card["largeWidth"] = large.width
        card["largeHeight"] = large.height
        return card
    }

    static func card(index: Int, file: ImageFile, status: VerificationStatus) -> [String: Any] {
        return [
            "index": index,
            "piece": file.pieceNumber ?? -1,
            "name": file.name,
            "price": file.formattedPrice,
            "status": status.label,
            "statusLabel": Self.label(status),
            "marked": status != .verified,
            // Only an image whose bytes match the signed feed is ever shown.
            "showImage": status == .verified,
            "placeholderText": status.failedVerification ? "failed verification" : "image unavailable",
        ]
    }

    /// The size of the gallery's art (360 x 650 PNGs with alpha, which the thumbnailer resizes
    /// to exactly this) in an image route's box at 1x (in the default 200 px box 111 x 200, in
    /// the 600 px box 332 x 600): stated on the page so nothing shifts as images arrive.
    func artSize(in route: ImageRoute) -> (width: Int, height: Int) {
        let box = services.boxes[route] ?? 0
        return Imaging.fittedSize(width: 360, height: 650, boxWidth: box, boxHeight: box)
    }

    static func label(_ status: VerificationStatus) -> String {
        switch status {
        case .verified: "verified"
        case .mismatch: "checksum mismatch"
        case .missing: "missing"
        case .failed: "failed to load"
        case .notCached: "not cached (offline)"
        case .pending: "not verified"
        }
    }

    /// What the catalog says about where its feed came from, when it is not a fresh answer.
    static func notice(_ origin: EmojiArtModel.FeedOrigin?) -> String? {
        switch origin {
        case let .galleryUnreachable(reason):
            "The gallery is unreachable (\(reason)): showing the catalog and images from the cache."
        case .offline:
            "Offline: showing the catalog and images from the cache only."
        case .notReauthenticated:
            origin?.notReauthenticatedText
        case .downloaded, .revalidated, nil:
            nil
        }
    }

    /// The footer's words before the key: the catalog shown now was not re-authenticated when
    /// the gallery's answer was refused, and the footer must not say it was.
    static func feedKeyText(_ origin: EmojiArtModel.FeedOrigin?) -> String {
        if case .notReauthenticated = origin {
            return "Feed not re-authenticated now; last authenticated with the gallery's Ed25519 key"
        }
        return "Feed authenticated with the gallery's Ed25519 key"
    }

    static func summary(_ progress: VerificationProgress) -> String {
        "\(progress.total) pieces · \(progress.verified) verified · \(progress.missing) missing · "
            + "\(progress.mismatched) mismatched · \(progress.failed) failed"
            + (progress.notCached > 0 ? " · \(progress.notCached) not cached" : "")
    }

    static func text(of phase: EmojiArtModel.Phase) -> String {
        switch phase {
        case .idle: "Starting…"
        case .loadingFeed: "Loading the feed…"
        case .verifying: "Downloading and checking every image…"
        case .ready: "Done."
        case let .failed(message): message
        }
    }

    /// The policy every page carries: scripts, styles and images from the app itself only (no
    /// inline script, style or handler), and no framing by any page.
    static var contentSecurityPolicy: String { "default-src 'self'; frame-ancestors 'none'" }

    /// A page: HTML with the policies every page carries (``contentSecurityPolicy``; the full
    /// `Referer` only to the app's own pages, which ``back(_:)`` relies on).
    static func html(_ page: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy: contentSecurityPolicy, .referrerPolicy: "same-origin",
            ],
            body: .init(byteBuffer: ByteBuffer(string: page))
        )
    }

    /// 303 back to the page the form was on, or home: only to a path of the app's own origin
    /// (the `Referer` of the request's own `Host`) that starts with exactly one `/` (`//x` and
    /// `/\x` are other hosts to a browser).
    static func back(_ request: Request) -> Response {
        var target = "/"
        if let referer = request.headers[.referer], let authority = request.head.authority,
           let url = URLComponents(string: referer), let scheme = url.scheme, let host = url.percentEncodedHost,
           url.user == nil, url.password == nil,
           AllowedHosts.isSameOrigin(URL.origin(scheme: scheme, host: host, port: url.port)[...], as: authority[...]) {
            let path = url.percentEncodedPath.utf8
            if path.first == UInt8(ascii: "/"), path.dropFirst().first != UInt8(ascii: "/"), path.dropFirst().first != UInt8(ascii: "\\") {
                target = url.percentEncodedPath
            }
        }
        return Response(status: .seeOther, headers: [.location: target])
    }
}
