import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The nginx configuration that puts several app instances behind one address: the edge, with
/// an image cache sharded by piece, and the origin shield in front of the gallery. One template:
/// `emojiart cluster` writes it for its processes, `deploy/nginx/emojiart.conf` is it for three
/// instances on fixed ports, and a test keeps the two the same.
///
/// - Image routes (`/thumbs/N`, `/large/N`): `hash` on the piece number, `consistent`, so a
///   piece's thumbnail and large image have one owner among the instances; `proxy_cache` with
///   `proxy_cache_lock` (one miss per key reaches an instance) and `proxy_cache_use_stale`;
///   `proxy_next_upstream error timeout` skips a dead instance. Answers are kept as their
///   `Cache-Control` says: with `--http-cache immutable`, for a year under their `?v=` URL.
///   Only a request in the route's own form is kept (``cacheableImageRequest``): its key is
///   that form, so no client can grow the cache with query strings of its own; every other
///   request (no `v=`, parameters the route does not define) goes to an instance uncached,
///   with its conditional fields, so a plain URL keeps its 304 and junk gets the app's 400.
/// - Pages, JSON, the event stream and the clear actions: `hash` on the client's address, so one
///   browser stays with one instance and the toolbar is about that instance; the event stream is
///   not buffered.
/// - The shield: a second `server` on its own port in front of the gallery, with its own cache and
///   `proxy_cache_lock`, which the instances use as their gallery: the whole cluster asks the
///   gallery once per piece. The signed feed is passed through uncached, its conditionals and
///   signed 304s end to end.
/// - An allow-list: the edge and the shield pass on the routes behind them
///   (``edgeRoutes``, ``shieldRoutes``), each in its one spelling (``misspeltRequest``), and
///   answer 404 to anything else themselves.
/// - Slow and greedy clients are cut off: a request head must arrive within 10 s, one address
///   may have ``requestsPerClient`` requests in progress, ``streamsPerClient`` event streams,
///   an action every 2 s; no route takes a body over 1 KB; ``workerConnections`` a worker.
/// - Keep-alive connections to every upstream.
public struct EdgeConfiguration: Sendable, Hashable {
    /// Ports of the app instances on `host`.
    public var instancePorts: [Int]
    /// Port of the gallery on `host`.
    public var galleryPort: Int
    /// Port the edge listens on (the address people open).
    public var edgePort: Int
    /// Port the shield listens on (the instances' `--gallery`).
    public var shieldPort: Int
    /// Where the upstreams listen, and where the edge and the shield listen.
    public var host: String
    /// Directory of nginx's caches (`images/` and `shield/`) and temporary files.
    public var cacheDirectory: String
    /// The largest size of each of the two caches, in megabytes.
    public var cacheMegabytes: Int

    /// The one definition of what the edge keeps: an image route's request line in its own form,
    /// the path (the piece without leading zeros, so one piece has one key) and its own
    /// parameters (`v=`, 16 hex digits), as a PCRE pattern on
    /// `$request_uri`. A request that matches is kept under that very URI; one that does not is
    /// passed on uncached. Add a route's new parameters here, nowhere else.
    public static let cacheableImageRequest = #"^/(?:thumbs|large)/(?:2x/)?"# + pieceNumber + #"\?v=[0-9a-f]{16}$"#

    /// The one definition of a request the edge and the shield answer 404 whatever its path: one
    /// whose path (`$request_uri` up to `?`) has an empty segment, a trailing slash, a dot segment
    /// or a percent-encoded byte, as `FastLane.hasOneSpelling` says for the app and the gallery.
    /// nginx matches its locations on the path normalised (`//stats` as `/stats`, `/a/../retry` as
    /// `/retry`) and passes on the original: without this, another spelling of a route would
    /// reach its location and an instance (issue 40). PCRE patterns on `$request_uri`; a request
    /// matching either is refused.
    public static let misspeltRequest = [#"^[^?#]*(?://|/\.\.?(?:[/?#]|$)|%)"#, #"^[^?#]+/(?:[?#]|$)"#]

    /// The format token of a request's `Accept` as the edge reads it: `avif` or `webp` when the
    /// field names that type with a q-value above 0 (AVIF first), else `png`. The edge keys
    /// image answers by it and sends the instance the matching normalised `Accept`, so it holds
    /// one entry per format, whatever each browser's field says, and each entry is in its
    /// token's format. It honours a q-value of 0 but not finer preferences: a client that names
    /// AVIF at any q-value above 0 gets AVIF (where the app alone would weigh it against PNG).
    static let formatMaps = #"""
    map $http_accept $emojiart_avif {
        "~*(?:^|,)\s*image/avif\s*;[^,]*\bq\s*=\s*0(?:\.0{0,3})?\s*(?:[,;]|$)" "";
        "~*(?:^|,)\s*image/avif\s*(?:[,;]|$)" avif;
        default "";
    }
    map $http_accept $emojiart_webp {
        "~*(?:^|,)\s*image/webp\s*;[^,]*\bq\s*=\s*0(?:\.0{0,3})?\s*(?:[,;]|$)" "";
        "~*(?:^|,)\s*image/webp\s*(?:[,;]|$)" webp;
        default "";
    }
    map "$emojiart_avif:$emojiart_webp" $emojiart_format {
        ~^avif avif;
        :webp webp;
        default png;
    }
    map $emojiart_format $emojiart_accept {
        avif "image/avif,image/webp,image/png";
        webp "image/webp,image/png";
        default "image/png";
    }
    """#

    /// Whether `path` can go into nginx's configuration as a quoted string: absolute, and free of
    /// the quote, the backslash, `$` and control characters, which nginx would read as syntax.
    public static func isUsableInConfiguration(_ path: String) -> Bool {
        path.hasPrefix("/") && !path.unicodeScalars.contains { scalar in
            scalar == "\"" || scalar == "\\" || scalar == "$" || scalar.value < 0x20 || scalar.value == 0x7f
        }
    }

    /// A path nginx's configuration cannot take (``isUsableInConfiguration(_:)``).
    public struct UnusablePath: Error, Sendable, CustomStringConvertible {
        /// The path.
        public var path: String
        /// What happened and what to do.
        public var description: String {
            "\(path) cannot go into nginx's configuration: use an absolute path without quotes, backslashes, $ or control characters"
        }
    }

    /// `path` as an nginx string: quoted, so a space or `;` in it is not syntax. Every path is
    /// checked with ``isUsableInConfiguration(_:)`` first (the cache directory by `init`, the
    /// prefix by ``nginxConf(prefix:workers:)``).
    static func quoted(_ path: String) -> String { "\"" + path + "\"" }

    /// The edge's certificate and key, PEM files: with them it speaks TLS and HTTP/2 (HTTP/1.1
    /// for a client that does not offer h2); without, plain HTTP/1.1.
    public struct TLSFiles: Sendable, Hashable {
        /// The certificate chain.
        public var certificate: String
        /// The private key.
        public var key: String

        /// Names the two files.
        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// The edge's TLS files, if it speaks TLS (see ``TLSFiles``).
    public var tls: TLSFiles?

    /// Creates a configuration.
    /// - Throws: ``UnusablePath`` when `cacheDirectory` or a TLS file is not usable in nginx's
    ///   configuration.
    public init(
        instancePorts: [Int], galleryPort: Int, edgePort: Int, shieldPort: Int, host: String = "127.0.0.1",
        cacheDirectory: String, cacheMegabytes: Int = 1024, tls: TLSFiles? = nil
    ) throws(UnusablePath) {
        for path in [tls?.certificate, tls?.key].compactMap(\.self) where !Self.isUsableInConfiguration(path) {
            throw UnusablePath(path: path)
        }
        self.tls = tls
        self.instancePorts = instancePorts
        self.galleryPort = galleryPort
        self.edgePort = edgePort
        self.shieldPort = shieldPort
        self.host = host
        guard Self.isUsableInConfiguration(cacheDirectory) else { throw UnusablePath(path: cacheDirectory) }
        self.cacheDirectory = cacheDirectory
        self.cacheMegabytes = cacheMegabytes
    }

    /// The `http { ... }` block's contents: caches, maps, upstreams and the two servers.
    public var httpBlock: String {
        let instances = instancePorts.map { "    server \(host):\($0) max_fails=1 fail_timeout=5s;" }.joined(separator: "\n")
        return """
            # EmojiArt: \(instancePorts.count) app instances behind one edge, the gallery behind a shield.
            proxy_cache_path \(Self.quoted(cacheDirectory + "/images")) levels=1:2 keys_zone=emojiart_images:10m max_size=\(cacheMegabytes)m inactive=30d use_temp_path=off;
            proxy_cache_path \(Self.quoted(cacheDirectory + "/shield")) levels=1:2 keys_zone=emojiart_shield:10m max_size=\(cacheMegabytes)m inactive=30d use_temp_path=off;
            proxy_temp_path \(Self.quoted(cacheDirectory + "/temp"));

            # A piece's thumbnails and large images, 1x and 2x, share one owner: the hash key is the piece.
            map $uri $emojiart_piece {
                ~^/(?:thumbs|large)/(?:2x/)?(?<piece>[0-9]+)$ $piece;
                default $uri;
            }

            # What the edge keeps of an image route: the request in the route's own form (its path
            # and v=), under that URI. Anything else is passed on uncached (see @emojiart_uncached).
            map $request_uri $emojiart_image_key {
                "~\(Self.cacheableImageRequest)" $request_uri;
                default "";
            }

            # The image format by Accept (avif, webp or png): part of the key of every kept image
            # answer, and the Accept the instance is sent, so the edge keeps one entry per format
            # (not one per browser's Accept, which the answers' Vary: Accept would make).
            \(Self.formatMaps)

            upstream emojiart_images {
                hash $emojiart_piece consistent;
            \(instances)
                keepalive 32;
            }

            # The image service's URLs: every variant of a source has one owner, which fetches the source
            # once. The key is the source as the URL writes it: after /plain/ up to the extension, or the
            # base64 after the options (the segments with a ':').
            map $request_uri $emojiart_source {
                "~^\(Self.imageServicePrefix)/[^/]+/(?:[^/]*:[^/]*/)*(?:plain/(?<plain>[^@?]*)|(?<encoded>[^.?]*))" "$plain$encoded";
                default $request_uri;
            }

            upstream emojiart_sources {
                hash $emojiart_source consistent;
            \(instances)
                keepalive 32;
            }

            # One spelling per route (the app's and the gallery's rule too): a path with an empty segment,
            # a trailing slash, a dot segment or a percent-encoded byte is answered 404 by the edge and the
            # shield. nginx matches locations on the path normalised (//stats as /stats) but passes on the
            # original, so another spelling would otherwise get a route's location, or escape its limits.
            map $request_uri $emojiart_misspelt {
                "~^[^?#]*/\\.\\.?(?:[/?#]|$)" 1;  # a dot segment, under the image service's prefix too
                "~^\(Self.imageServicePrefix)/" "";  # the image service's paths: checked whole by their signature
                "~\(Self.misspeltRequest[0])" 1;
                "~\(Self.misspeltRequest[1])" 1;
                default "";
            }

            # Slow clients are cut off: a request's head must arrive whole within 10 s (nginx's 60 s let
            # 2,100 half-sent requests from one address hold every worker connection), a body or an
            # answer may stall 10 s or 30 s at most between two reads or writes, and no route takes a body.
            client_header_timeout 10s;
            client_body_timeout 10s;
            send_timeout 30s;
            client_max_body_size 1k;

            # Greedy clients: one address may have \(Self.requestsPerClient) requests in progress at the edge at once (a
            # request counts once its head is read: while its body arrives and its answer, a stream's too,
            # is sent), then 429.
            limit_conn_zone $binary_remote_addr zone=emojiart_clients:1m;

            # The toolbar's actions (clear a cache, retry) are open to every client, as the page
            # offers them; each client may take one every 2 s, with a burst of 5 (a loop of them
            # cost its instance 13 % of a core and the gallery a fetch per piece each time).
            limit_req_zone $binary_remote_addr zone=emojiart_actions:1m rate=30r/m;

            # Event streams (a page's live counters) are held open: each client address may hold \(Self.streamsPerClient) at
            # once, then 429, so no client takes every stream its instance serves (256) from the others.
            limit_conn_zone $binary_remote_addr zone=emojiart_streams:1m;

            # One browser, one instance: its toolbar counts and clears that instance's caches.
            upstream emojiart_pages {
                hash $remote_addr consistent;
            \(instances)
                keepalive 16;
            }

            upstream emojiart_gallery {
                server \(host):\(galleryPort);
                keepalive 16;
            }

            # The edge: what people open. It passes on the app's routes (EdgeConfiguration.edgeRoutes),
            # each in its one spelling, and answers 404 to anything else.
            server {
                \(edgeListen)
                proxy_http_version 1.1;
                proxy_set_header Connection "";
                proxy_set_header Host $http_host;
                # Who the client is, for the instance's per-client limits (its --behind-edge): set here, so
                # a client cannot name another.
                proxy_set_header EmojiArt-Client-Address $remote_addr;
                limit_conn emojiart_clients \(Self.requestsPerClient);
                limit_conn_status 429;

                # A request without a Host field (HTTP/1.0 allows it, in absolute form too) is refused here:
                # an instance, asked without one, would answer 400 and close a kept connection of the pool.
                if ($http_host = "") { return 400; }
                if ($emojiart_misspelt) { return 404; }

                # Text the instances did not compress (--no-compression) is compressed here; an
                # answer already compressed passes as it is, and images never are.
                gzip on;
                gzip_proxied any;
                gzip_vary on;
                gzip_types text/css text/javascript application/javascript application/json text/plain image/svg+xml;

                # An image request the edge does not keep: no v= (its conditional fields reach the
                # instance, which answers 304), or parameters the route does not define (400).
                location @emojiart_uncached {
                    proxy_pass http://emojiart_images;
                    proxy_next_upstream error timeout;
                    proxy_next_upstream_tries 3;
                    proxy_connect_timeout 2s;
                }

                # The app's routes. Operations are not public: Prometheus scrapes each instance's
                # /metrics where it listens (deploy/prometheus), and `emojiart cache stats --app` names
                # an instance.
                \(indented(locations(Self.edgeRoutes)))
            }

            # The origin shield: the instances' gallery. One request per piece reaches the gallery. It
            # passes on what the instances ask for (EdgeConfiguration.shieldRoutes), 404 to anything else.
            # The signed feed passes end to end, conditionals both ways: it is no-cache (never stored
            # here), and a cached location would drop If-None-Match on the way up and so turn every
            # signed 304 into a whole download.
            server {
                listen \(host):\(shieldPort);
                proxy_http_version 1.1;
                proxy_set_header Connection "";
                if ($emojiart_misspelt) { return 404; }

                \(indented(locations(Self.shieldRoutes)))
            }
            """
    }

    /// `text` with every line after the first indented by four spaces, to sit inside a block.
    private func indented(_ text: String) -> String {
        text.replacingOccurrences(of: "\n", with: "\n    ")
    }

    /// The edge's `listen` line, with TLS and HTTP/2, the certificate's lines and HSTS when
    /// ``tls`` is set (nginx 1.22 writes HTTP/2 as a `listen` parameter; it speaks HTTP/1.1 to
    /// the instances all the same).
    private var edgeListen: String {
        guard let tls else { return "listen \(host):\(edgePort);" }
        return """
        listen \(host):\(edgePort) ssl http2;
            ssl_certificate \(Self.quoted(tls.certificate));
            ssl_certificate_key \(Self.quoted(tls.key));
            ssl_protocols TLSv1.2 TLSv1.3;
            ssl_session_cache shared:emojiart_tls:1m;

            # A browser that reached the edge over TLS comes back over TLS only, for a year. A
            # location with add_header of its own (the images') says it again: nginx's add_header
            # is not inherited into a location that has one.
            \(Self.strictTransportSecurity)
        """
    }

    /// HSTS (RFC 6797) for a year, on every answer of a TLS edge, errors included.
    static let strictTransportSecurity = #"add_header Strict-Transport-Security "max-age=31536000" always;"#

    /// Connections each nginx worker takes, clients' and upstreams' (nginx's default, 1024, let
    /// one address hold them all with half-sent requests).
    public static let workerConnections = 8192

    /// The main context's settings for ``workerConnections`` `connections` a worker: the
    /// descriptors each worker may open (``descriptors(forWorkerConnections:)``) and the
    /// connections. `conf.d` cannot set them: deploy/nginx's files name them in their header, for
    /// /etc/nginx/nginx.conf.
    public static func mainContext(workerConnections connections: Int = workerConnections) -> [String] {
        ["worker_rlimit_nofile \(descriptors(forWorkerConnections: connections));", "events { worker_connections \(connections); }"]
    }

    /// The descriptors a worker of `connections` connections may open (its `worker_rlimit_nofile`):
    /// two per proxied request, the image cache files it keeps open (`open_file_cache`), and a
    /// few for its logs and listening sockets.
    public static func descriptors(forWorkerConnections connections: Int) -> Int {
        2 * connections + openFileCache + 64
    }

    /// The fewest connections a worker is given: below them, `cluster` stops and says what to
    /// raise rather than start an edge a few clients could fill.
    public static let minimumWorkerConnections = 1024

    /// A hard descriptor limit too low for an edge of ``minimumWorkerConnections`` a worker.
    public struct DescriptorLimitTooLow: Error, Sendable, Hashable, CustomStringConvertible {
        /// The hard `RLIMIT_NOFILE` found.
        public var hardLimit: Int
        /// The least it must be (``descriptors(forWorkerConnections:)`` of the minimum).
        public var needed: Int

        /// The error for a hard limit of `hardLimit` where `needed` are needed.
        public init(hardLimit: Int, needed: Int) {
            self.hardLimit = hardLimit
            self.needed = needed
        }
        /// What happened and what to do.
        public var description: String {
            let full = EdgeConfiguration.descriptors(forWorkerConnections: EdgeConfiguration.workerConnections)
            return "the hard limit on open files (ulimit -Hn) is \(hardLimit), but each nginx worker of the edge needs \(needed) at least "
                + "(\(EdgeConfiguration.minimumWorkerConnections) connections and its image cache; \(full) for the full \(EdgeConfiguration.workerConnections)): "
                + "raise the hard limit (as root: ulimit -Hn \(full); in a systemd unit: LimitNOFILE=\(full); in a container: --ulimit nofile=\(full)), "
                + "then start the cluster again"
        }
    }

    /// The connections a worker can have under a hard `RLIMIT_NOFILE` of `hardLimit` (`nil`:
    /// unlimited): ``workerConnections``, or as many as fit when the limit is lower, so that
    /// ``mainContext(workerConnections:)``'s `worker_rlimit_nofile` is one the limit allows (nginx
    /// not running with the privilege to raise it only logs its `setrlimit` failure, and its
    /// workers then run out of descriptors long before their connections).
    /// - Throws: ``DescriptorLimitTooLow`` when not even ``minimumWorkerConnections`` fit.
    public static func workerConnections(fittingHardLimit hardLimit: Int?) throws(DescriptorLimitTooLow) -> Int {
        guard let hardLimit else { return workerConnections }
        let fitting = min(workerConnections, (hardLimit - descriptors(forWorkerConnections: 0)) / 2)
        guard fitting >= minimumWorkerConnections else {
            throw DescriptorLimitTooLow(hardLimit: hardLimit, needed: descriptors(forWorkerConnections: minimumWorkerConnections))
        }
        return fitting
    }

    /// This process's hard `RLIMIT_NOFILE`, which the nginx it starts inherits; `nil` when
    /// unlimited (or unknown).
    public static func hardDescriptorLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_max != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_max)
    }

    /// A whole `nginx.conf` for nginx run as `nginx -p PREFIX -c FILE`: the `http` block, with a
    /// pid file and logs under `prefix`, `workers` worker processes of `workerConnections`
    /// connections each (``mainContext(workerConnections:)``).
    /// - Throws: ``UnusablePath`` when `prefix` is not usable in nginx's configuration.
    public func nginxConf(prefix: String, workers: Int = 2, workerConnections: Int = Self.workerConnections) throws(UnusablePath) -> String {
        guard Self.isUsableInConfiguration(prefix) else { throw UnusablePath(path: prefix) }
        return """
        # Generated by emojiart (EdgeConfiguration): edit the template in Sources/EmojiArtApp/Cluster.
        worker_processes \(workers);
        pid \(Self.quoted(prefix + "/nginx.pid"));
        error_log \(Self.quoted(prefix + "/error.log")) warn;
        \(Self.mainContext(workerConnections: workerConnections).joined(separator: "\n"))
        http {
            access_log off;
            sendfile on;
            tcp_nopush on;
            tcp_nodelay on;
            keepalive_requests 1000000;
            client_body_temp_path \(Self.quoted(cacheDirectory + "/temp/client"));
            fastcgi_temp_path \(Self.quoted(cacheDirectory + "/temp/fastcgi"));
            uwsgi_temp_path \(Self.quoted(cacheDirectory + "/temp/uwsgi"));
            scgi_temp_path \(Self.quoted(cacheDirectory + "/temp/scgi"));
        \(httpBlock.split(separator: "\n", omittingEmptySubsequences: false).map { $0.isEmpty ? "" : "    " + $0 }.joined(separator: "\n"))
        }

        """
    }
}
