import Foundation
import Hummingbird
import ImageCache
import GalleryFeed
import HTTPCaching
import Imaging
import Synchronization

/// The HTML pages: loading (live progress), the catalog, details, and the cache actions.
struct PageController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        // A person reads these answers: an error is a page, never a stack trace.
        let routes = RouteCollection(context: Context.self).add(middleware: ErrorPageMiddleware(services: services))
        routes.get("/", use: home)
        routes.get("pieces/:index", use: details)
        routes.post("cache/clear-memory") { request, _ in
            await services.pipeline.clearMemory()
            return Self.back(request)
        }
        routes.post("cache/clear-disk") { request, _ in
            await services.pipeline.clearDisk()
            services.forgetPrefetches()
            return Self.back(request)
        }
        // One retry for everyone: joined while one is under way, the feed asked for at most once
        // per interval (unless it failed), the failed entries verified again behind the catalog.
        routes.post("retry") { _, _ in
            await services.model.retry()
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
            return try await catalog(request)
        }
    }

    /// A page of the catalog (`?page=N`, ``pageSize`` entries a page, the first by default),
    /// rendered once per edition of what it shows and answered from memory after that, with its
    /// `ETag` (a `304` to a browser that has it).
    func catalog(_ request: Request) async throws -> Response {
        let model = services.model
        let page = try Self.pageNumber(request.uri.queryParameters.get("page"))
        // How old the feed is, on the model's clock: "as of ..." once its prices are stale.
        let age = model.feedAge.value, ageTime = model.now()
        let edition = CatalogPages.Edition(
            edits: model.catalogEdits.load(ordering: .acquiring), progress: model.progress.value,
            feedKey: model.feedKey.value, feedOrigin: model.feedOrigin.value, extra: age?.text(at: ageTime) ?? ""
        )
        let key = CatalogPages.Key(page: page, edition: edition)
        let total = edition.progress.total
        let pages = max(1, (total + Self.pageSize - 1) / Self.pageSize)
        guard page <= pages else {
            throw HTTPError(.notFound, message: "The catalog has \(pages) page\(pages == 1 ? "" : "s"); there is no page \(page).")
        }
        let rendered: CatalogPages.Rendered
        if let kept = services.catalogPages.page(key) {
            rendered = kept
        } else {
            let first = (page - 1) * Self.pageSize
            let entries = await model.entries(in: first..<(first + Self.pageSize))
            let cards: [[String: Any]] = entries.enumerated().map { offset, entry in
                var card = card(index: first + offset, file: entry.file, status: entry.status)
                // The browser's own order of loading, stated: the first row at once and first,
                // the rest of the first screen at once, what is below it when scrolled to.
                card["firstRow"] = offset < Self.firstRow
                card["belowFirstScreen"] = offset >= Self.firstScreen
                return card
            }
            var context: [String: Any] = [
                "title": "Catalog", "cards": cards, "summary": Self.summary(edition.progress),
                "feedKey": edition.feedKey?.fingerprint ?? "",
                "feedKeyText": Self.feedKeyText(edition.feedOrigin),
            ]
            if pages > 1 { context["pager"] = Self.pager(page: page, of: pages) }
            if let notice = Self.notice(edition.feedOrigin) { context["notice"] = notice }
            if let age {
                context["feedAge"] = edition.extra
                context["feedAgeClass"] = age.isStale(at: ageTime) ? "notice" : "summary"
            }
            let counters = services.catalogPages.markers(Array(await services.counters().keys))
            rendered = services.catalogPages.keep(services.render("list", context, counters: counters), for: key)
            // The details variants of what is shown, ahead of a click, at low priority: after
            // every thumbnail and verification, and refused first when the queues are full.
            let pieces = Set(entries.filter { $0.status == .verified }.compactMap(\.file.pieceNumber))
            // In the format this browser's image requests will name: its page request's
            // `Accept` lists the image formats it takes too (Chromium's does; one that names
            // none gets the PNGs).
            services.prefetchDetails(of: pieces.sorted(), format: services.format(accept: request.headers[.accept]))
        }
        if let ifNoneMatch = request.headers[.ifNoneMatch], ConditionalRequest.matches(ifNoneMatch, etag: rendered.etag) {
            return Self.html("", status: .notModified, etag: rendered.etag)
        }
        return Self.html(rendered.filled(await services.counters()), etag: rendered.etag)
    }

    /// Entries a catalog page shows.
    static var pageSize: Int { 100 }

    /// The page number `?page=` names: 1 when absent; anything but a positive whole number is
    /// no page (404).
    static func pageNumber(_ value: String?) throws -> Int {
        guard let value else { return 1 }
        guard value.utf8.count <= 9, value.utf8.allSatisfy({ (48...57).contains($0) }), let page = Int(value), page >= 1 else {
            throw HTTPError(.notFound, message: "There is no such page of the catalog.")
        }
        return page
    }

    /// The pager's template values: this page, the count, and the links before and after.
    static func pager(page: Int, of pages: Int) -> [String: Any] {
        var pager: [String: Any] = ["page": page, "pages": pages]
        if page > 1 { pager["previous"] = page == 2 ? "/" : "/?page=\(page - 1)" }
        if page < pages { pager["next"] = "/?page=\(page + 1)" }
        return pager
    }

    @Sendable func details(_ request: Request, context: Context) async throws -> Response {
        guard let index = context.parameters.get("index").flatMap(ImageRoute.pieceNumber),
              let entry = await services.model.entry(at: index)
        else {
            throw HTTPError(.notFound, message: "There is no piece with that number in the catalog.")
        }
        // The person opened it: its details image, if still being prefetched, comes first now.
        let kind = VariantKind(route: .large, density: 1, format: services.format(accept: request.headers[.accept]))
        if let piece = entry.file.pieceNumber, let large = services.variant(piece: piece, kind: kind)?.request {
            await services.prefetcher.setPriority(.high, for: [large])
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
    /// With `etag`, a browser may keep the page and must ask again (`no-cache`) on each load;
    /// without, it keeps nothing (`no-store`).
    static func html(_ page: String, status: HTTPResponse.Status = .ok, etag: String? = nil) -> Response {
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: etag == nil ? "no-store" : "no-cache",
            .contentSecurityPolicy: contentSecurityPolicy, .referrerPolicy: "same-origin",
        ]
        if let etag { headers[.eTag] = etag }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
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
