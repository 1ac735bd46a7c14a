public import Foundation
public import ImageService
public import NIOCore

/// How to run the web app.
public struct AppConfiguration: Sendable {
    /// Address to bind; loopback by default.
    public var host: String
    /// Port to bind; 0 picks a free one.
    public var port: Int
    /// The gallery's base URL.
    public var galleryURL: URL
    /// Images verified at once.
    public var concurrency: Int
    /// Side of the list's thumbnails, in pixels.
    public var thumbnailSize: Int
    /// Side of the box the details page's image fits in, in pixels.
    public var detailSize: Int
    /// Which gallery keys the feed may be signed with: trust on first use by default.
    public var trust: GalleryTrust
    /// Never touch the network: the feed and images come from the cache only.
    public var offline: Bool
    /// How browsers and proxies may cache the image answers; ``HTTPCacheMode/revalidate`` by
    /// default.
    public var httpCache: HTTPCacheMode
    /// The name the toolbar shows, when several instances run behind one address; `nil` shows
    /// none.
    public var instanceName: String?
    /// Answer memory hits of the image routes on the event loop (`FastLane`), byte for byte as
    /// the routes would; on by default. Off, every request goes through Hummingbird's router.
    public var fastLane: Bool
    /// Compress text answers (pages, JSON, scripts, styles) with gzip or deflate for clients that
    /// accept it; on by default. Images are never compressed.
    public var compression: Bool
    /// How long a connection may stay quiet (no complete request head, no request after the last
    /// answer) before the app closes it; 75 s by default (longer than the 60 s that nginx and
    /// AsyncHTTPClient keep an idle connection for, so a client never sends on one just closed),
    /// `nil` never. A client that opens connections and sends nothing, or half a head, cannot hold
    /// them (and the file descriptors) for ever. An answer being sent (an event stream) is not cut
    /// while the client takes it.
    public var idleTimeout: TimeAmount? = .seconds(75)
    /// The time a client has to send a whole request, head and body, and the longest an answer
    /// may wait for a client that takes none of its bytes (an event stream's too); 30 s by
    /// default, `nil` never. Past either the connection is closed: a client trickling a request or
    /// not reading cannot hold a connection, however steadily it trickles.
    public var requestTimeout: TimeAmount? = .seconds(30)
    /// The most connections open at once; one more is closed as soon as it is accepted and counted
    /// (`connections_cut{reason="over_limit"}` in `/metrics`). `nil` (the default): the process's
    /// descriptor limit less room for the disk cache and origin connections
    /// (`ConnectionLimits.defaultMaxConnections`).
    public var maxConnections: Int?
    /// The most `/events` streams open at once; when all are taken, the oldest stream of the
    /// client address holding the most ends for a client holding fewer, and one holding as many as
    /// the most is answered 503 with `Retry-After` (its page works on, without live counters). Each stream holds a connection, four tasks and up
    /// to 256 events waiting for a client that reads slowly: 256 by default, a page each.
    public var maxEventStreams = 256
    /// The most `/events` streams one client address may hold (16 by default, the edge's own
    /// limit); one more is answered 429. When every place is taken, the oldest stream of the
    /// address holding the most ends for an address holding fewer (``maxEventStreams``).
    public var maxEventStreamsPerClient = 16
    /// Whether the app runs behind an edge on this machine (`emojiart cluster`'s nginx) that names
    /// each request's client in `EmojiArt-Client-Address`: the address the app counts a request's
    /// event streams for, taken from a loopback peer only (`--behind-edge`). Without it, every
    /// client behind the edge would be one address.
    public var clientAddressFromEdge = false
    /// How often each `/events` stream sends a comment line (15 s by default). A stream whose
    /// client closes the connection, or its sending side, ends at once; the comment finds one
    /// whose client went away without a word (its next write fails) and gives its slot back.
    public var eventStreamHeartbeat: Duration = .seconds(15)
    /// How long one `/events` stream lasts before the app ends it (10 minutes by default); the
    /// page's `EventSource` opens the next at once (`retry: 1000`). A client that stops reading is
    /// found by the send deadline only once the sockets' buffers are full, which a stream's few
    /// bytes take hours to fill: this bounds how long such a client holds a place.
    public var eventStreamLifetime: Duration = .seconds(600)
    /// The formats the image routes offer, chosen per request by its `Accept`
    /// (``ServedFormat/negotiate(_:offered:)``); AVIF, WebP and PNG by default. PNG must be among
    /// them (``ServedFormat/list(_:)`` checks a `--formats` list); it is added when missing.
    public var formats: [ServedFormat] {
        didSet { formats = Self.offered(formats) }
    }
    /// The origin the gallery's signed feed must name (`--gallery-origin`); `nil` (the default)
    /// is the origin of ``galleryURL``. Give it when ``galleryURL`` is a proxy in front of the
    /// gallery (the cluster's shield).
    public var galleryOrigin: String?
    /// The least time between two feed checks that catalog loads ask for
    /// (`--feed-check-interval`): 30 s by default, whatever the gallery's answers say.
    public var feedCheckInterval: Duration = .seconds(30)
    /// The most bytes of thumbnail variants the app makes ahead once a feed is authenticated
    /// (`--warm-up-budget`, 32 MiB by default): each verified piece's thumbnail in every offered
    /// format at 1x and 2x, the feed's first pieces first, so a first visit is answered from
    /// memory in the format and density it asks for (``WarmUp``). 0 makes none: a first request
    /// of a slow format is answered with a stand-in, as before.
    public var warmUpBudget = 32 << 20
    /// The most source pixels the warm-up decodes for one feed edition
    /// (`--warm-up-megapixels`, 64 million by default: the book's 26 pieces are 6): each
    /// verified piece's original counts once (its variants share one decode), read from its
    /// header before it is decoded; past it, the warm-up stops. A gallery that lists thousands of
    /// large images makes it decode no more than this, whatever their bytes.
    public var warmUpPixelBudget = 64_000_000
    /// The largest original the warm-up decodes, in pixels (16 million by default): one above it
    /// is refused from its header, before any decode, and left to a request somebody makes.
    public var warmUpMaxSourcePixels = 16_000_000
    /// Host names the app answers to besides the bound address and `localhost` (`--allowed-host`):
    /// the names people open, e.g. an edge's in front. A request naming another host in `Host` is
    /// answered 421 (a page at a name rebound to this address must not read or change it).
    public var allowedHosts: [String]
    /// The image service served beside the app at its
    /// ``ImageService/ImageServiceConfiguration/pathPrefix`` (`/img` by the `app` command), with its own
    /// pipeline (its sources are strangers: never fetched by the gallery's client), or `nil`
    /// (the default) for none.
    public var imageService: ImageServer?

    /// Creates a configuration.
    public init(
        host: String = "127.0.0.1", port: Int = 8080, galleryURL: URL,
        concurrency: Int = 8, thumbnailSize: Int = 200, detailSize: Int = 600, trust: GalleryTrust = .default,
        offline: Bool = false, httpCache: HTTPCacheMode = .revalidate, instanceName: String? = nil,
        fastLane: Bool = true, compression: Bool = true, formats: [ServedFormat] = ServedFormat.allCases, allowedHosts: [String] = []
    ) {
        self.host = host
        self.port = port
        self.galleryURL = galleryURL
        self.concurrency = concurrency
        self.thumbnailSize = thumbnailSize
        self.detailSize = detailSize
        self.trust = trust
        self.offline = offline
        self.httpCache = httpCache
        self.instanceName = instanceName
        self.fastLane = fastLane
        self.compression = compression
        self.formats = Self.offered(formats)
        self.allowedHosts = allowedHosts
    }

    /// `formats` without repeats, PNG included, smallest first.
    static func offered(_ formats: [ServedFormat]) -> [ServedFormat] {
        Set(formats + [.png]).sorted { $0.rank < $1.rank }
    }

    /// The side of each image route's box at 1x: ``thumbnailSize`` and ``detailSize``.
    var boxes: [ImageRoute: Int] { [.thumbs: thumbnailSize, .large: detailSize] }

    /// Whether `name` can be given as an allowed host: a DNS name or an IP address (IPv6 with or
    /// without brackets), without a scheme, port or path.
    public static func isValidHostName(_ name: String) -> Bool {
        AllowedHosts.split(name.utf8[...], portAllowed: false) != nil
    }
}
