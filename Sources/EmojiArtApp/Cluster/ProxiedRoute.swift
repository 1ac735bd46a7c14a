import Foundation

/// A route the edge or the shield passes on, and how: the allow-list of what nginx proxies. The
/// template writes one `location` for each (``EdgeConfiguration/edgeRoutes``,
/// ``EdgeConfiguration/shieldRoutes``), for `emojiart cluster` and deploy/nginx alike; nginx
/// answers any other path 404 itself, and any other spelling of these
/// (``EdgeConfiguration/misspeltRequest``) too (issue 40: `/stats/`, `/events/` and `POST /retry/`
/// got past rules written for one spelling).
public struct ProxiedRoute: Sendable, Hashable {
    /// How nginx matches a request's path (its `$uri`, after the spelling check).
    public enum Path: Sendable, Hashable {
        /// This path exactly (`location = PATH`).
        case exact(String)
        /// A PCRE pattern, anchored at both ends (`location ~ PATTERN`), for a route with a
        /// parameter in its path.
        case pattern(String)
    }

    /// What the location does with a request.
    public enum Handling: Sendable, Hashable {
        /// To the instance of the client's address (pages, JSON, assets, health).
        case page
        /// An event stream: unbuffered, held open, at most ``EdgeConfiguration/streamsPerClient``
        /// per client address.
        case stream
        /// A toolbar action: limited per client address, one every 2 s with a burst of 5.
        case action
        /// An image route: sharded by piece, kept in the edge's cache in its own form
        /// (``EdgeConfiguration/cacheableImageRequest``), passed on uncached otherwise.
        case image
        /// The image service's imgproxy URLs (``EdgeConfiguration/imageServicePrefix``): sharded by
        /// source (one instance fetches each source), kept in the edge's cache under the URL as
        /// sent and the format class of `Accept`, as the service's answers say.
        case imageService
        /// At the shield, end to end and never kept: the signed feed (its conditionals and
        /// signed 304s pass both ways), health.
        case passed
        /// At the shield, kept in its cache; with `query`, only a query that matches that PCRE
        /// pattern whole is passed on (any other is 404), so no client keys the cache by queries
        /// of its own.
        case kept(query: String?)
    }

    /// The path nginx matches.
    public var path: Path
    /// What nginx does with it.
    public var handling: Handling

    /// A route.
    public init(_ path: Path, _ handling: Handling) {
        self.path = path
        self.handling = handling
    }

    /// Whether nginx would take `path` (a path without a query, in its one spelling) to this
    /// route's location. ICU's regular expressions read these patterns as PCRE does.
    public func matches(_ path: String) -> Bool {
        switch self.path {
        case let .exact(exact): exact == path
        case let .pattern(pattern): path.range(of: pattern, options: .regularExpression) != nil
        }
    }
}

extension EdgeConfiguration {
    /// A piece number as its routes spell it: decimal, no leading zeros, at most nine digits.
    static let pieceNumber = "(?:0|[1-9][0-9]{0,8})"

    /// The app's routes the edge passes on (Web/*Controller.swift, ImageController): every other
    /// path is 404 at the edge. `/stats` and `/metrics` are left off on purpose: an instance's
    /// own address serves its scraper and `cache stats --app` (``privateRoutes``).
    public static let edgeRoutes: [ProxiedRoute] = [
        .init(.exact("/"), .page),
        .init(.pattern("^/pieces/\(pieceNumber)$"), .page),
        .init(.exact("/assets/app.css"), .page),
        .init(.exact("/assets/app.js"), .page),
        .init(.exact("/health"), .page),
        .init(.exact("/events"), .stream),
        .init(.exact("/cache/clear-memory"), .action),
        .init(.exact("/cache/clear-disk"), .action),
        .init(.exact("/retry"), .action),
        .init(.pattern("^/(?:thumbs|large)/(?:2x/)?\(pieceNumber)$"), .image),
        .init(.pattern("^\(imageServicePrefix)/.+$"), .imageService),
    ]

    /// Where the app serves the image service (`emojiart app --allowed-source ...`): imgproxy's
    /// paths after it. Its paths hold a source's `//` and percent-escapes (`/plain/http://...`),
    /// checked whole by their signature: the edge's one-spelling rule does not apply to them.
    public static let imageServicePrefix = "/img"

    /// The gallery's routes the shield passes on (GalleryController, OpsController): what the
    /// instances ask for, and `/health` (the cluster's readiness check). Its `/metrics` is for the
    /// gallery's own address; the gate's and revisions' test routes are not proxied.
    public static let shieldRoutes: [ProxiedRoute] = [
        .init(.exact("/gallery/images"), .passed),
        .init(.exact("/gallery/image"), .kept(query: "^\(pieceNumber)$")),
        .init(.exact("/gallery/key"), .kept(query: nil)),
        .init(.exact("/health"), .passed),
    ]

    /// Routes the servers have that no proxy passes on: the operations' pages.
    public static let privateRoutes: Set<String> = ["/stats", "/metrics"]

    /// Event streams one client address may hold at the edge at once (429 past it): no client
    /// takes every stream its instance serves (256) from the others.
    public static let streamsPerClient = 16

    /// Requests one client address may have in progress at the edge at once (429 past it): a
    /// request counts once its head is read, while its body arrives and its answer (a stream's
    /// too) is sent. 128, HTTP/2's usual limit of streams on a connection, so one browser page
    /// over HTTP/2 fits.
    public static let requestsPerClient = 128

    /// The `location` blocks of `routes`, then 404 for every other path.
    func locations(_ routes: [ProxiedRoute]) -> String {
        (routes.map(location) + ["location / { return 404; }  # any path not listed above"]).joined(separator: "\n")
    }

    /// The `location` block of one route.
    private func location(_ route: ProxiedRoute) -> String {
        let match = switch route.path {
        case let .exact(path): "= \(path)"
        case let .pattern(pattern): "~ \"\(pattern)\""  // quoted: `{` and `}` are syntax
        }
        let body: [String] = switch route.handling {
        case .page: [
            "proxy_pass http://emojiart_pages;",
            "proxy_next_upstream error timeout;",
            "proxy_connect_timeout 2s;",
        ]
        case .stream: [
            // A location's own limit_conn replaces the server's: both are named here.
            "limit_conn emojiart_clients \(Self.requestsPerClient);",
            "limit_conn emojiart_streams \(Self.streamsPerClient);",
            "proxy_pass http://emojiart_pages;",
            "proxy_buffering off;",
            "proxy_read_timeout 1h;",
        ]
        case .action: [
            "limit_req zone=emojiart_actions burst=5 nodelay;",
            "limit_req_status 429;",
            "proxy_pass http://emojiart_pages;",
            "proxy_connect_timeout 2s;",
        ]
        case .image: imageLocationBody
        case .imageService: imageServiceLocationBody
        case .passed: ["proxy_pass http://emojiart_gallery;"]
        case let .kept(query): (query.map { [#"if ($args !~ "\#($0)") { return 404; }"#] } ?? []) + [
            "proxy_pass http://emojiart_gallery;",
            "proxy_cache emojiart_shield;",
            "proxy_cache_lock on;",
            "proxy_cache_lock_timeout 30s;",
            "proxy_cache_revalidate on;",
            "proxy_cache_valid 404 1m;  # a missing piece: asked once, not once per instance",
            "proxy_cache_use_stale error timeout updating http_500 http_502 http_503;",
            "add_header X-Cache-Status $upstream_cache_status always;",
        ]
        }
        return "location \(match) {\n" + body.map { "    " + $0 }.joined(separator: "\n") + "\n}"
    }

    /// An image route's location: a warm request is a cache hit, and `open_file_cache` keeps the
    /// cache files open, so a hit costs no `open`, `fstat` or `close`. That is safe here because
    /// an image's key is its URL with `?v=`, content-addressed: a cache file that is replaced
    /// under the same key holds the same bytes. A request not in the route's own form
    /// (``cacheableImageRequest``) goes to `@emojiart_uncached` instead (`return` is one of the
    /// two things nginx's `if` does safely in a location). An entry is kept under the request's
    /// host name (`$host`: lowercase, no port, from the request line when it names one) and the
    /// instance is asked with that name as `Host`, so the app's 421 decides for the very name the
    /// entry is kept under.
    private var imageLocationBody: [String] {
        [
            "error_page 418 = @emojiart_uncached;",
            #"if ($emojiart_image_key = "") { return 418; }"#,
            "proxy_pass http://emojiart_images;",
            "proxy_cache emojiart_images;",
            #"proxy_cache_key "$host $emojiart_image_key $emojiart_format";"#,
            "proxy_ignore_headers Vary;",
            "proxy_set_header Accept $emojiart_accept;",
            #"proxy_set_header Connection "";"#,
            "proxy_set_header Host $host;",
            "proxy_cache_lock on;",
            "proxy_cache_lock_timeout 30s;",
            "proxy_cache_use_stale error timeout updating http_502 http_503;",
            "proxy_next_upstream error timeout;",
            "proxy_next_upstream_tries 3;",
            "proxy_connect_timeout 2s;",
            "open_file_cache max=\(Self.openFileCache) inactive=60s;",
            "add_header X-Cache-Status $upstream_cache_status always;",
        ] + (tls == nil ? [] : [Self.strictTransportSecurity])
    }

    /// The image service's location: to the instance that owns the source (`$emojiart_source`,
    /// consistent hash), kept in the edge's image cache as the answer's `Cache-Control` says, under
    /// the host, the URL as sent and the format class of `Accept` (`avif`, `webp`, or `png` for
    /// any other: the source's own format), with that class's `Accept` sent on, so one entry per
    /// format whatever each browser's field says. Refusals are `no-store`: never kept. A query
    /// is refused by the service (400), so no client keys the cache by queries of its own. A
    /// slow answer is waited for, never asked of a second instance.
    private var imageServiceLocationBody: [String] {
        [
            "proxy_pass http://emojiart_sources;",
            "proxy_cache emojiart_images;",
            #"proxy_cache_key "$host $request_uri $emojiart_format";"#,
            "proxy_ignore_headers Vary;",
            "proxy_set_header Accept $emojiart_accept;",
            #"proxy_set_header Connection "";"#,
            "proxy_set_header Host $host;",
            "proxy_cache_lock on;",
            "proxy_cache_lock_timeout 60s;",
            "proxy_cache_use_stale error timeout updating http_502 http_503;",
            // Not on a time-out: the request is still being worked on there, and another
            // instance would only do the work again (and the slow one be marked down).
            "proxy_next_upstream error;",
            "proxy_next_upstream_tries 2;",
            "proxy_connect_timeout 2s;",
            // Above the service's own limits (a fetch's 10 s, processing's 10 s, a queue's 10 s).
            "proxy_read_timeout 60s;",
            "add_header X-Cache-Status $upstream_cache_status always;",
        ] + (tls == nil ? [] : [Self.strictTransportSecurity])
    }

    /// The image cache files each worker keeps open (`open_file_cache`): part of its descriptors.
    static let openFileCache = 10_000
}
