import FastLane
public import NIOCore
public import Foundation
import Hummingbird
import Logging
public import MessageSignatures

/// How to run a gallery.
public struct GalleryConfiguration: Sendable {
    /// Address to bind; loopback by default.
    public var host: String
    /// Port to bind; 0 picks a free one.
    public var port: Int
    /// Seed of the feed's order and prices.
    public var seed: UInt64
    /// Faults to inject into image requests; none by default.
    public var faults: FaultInjection
    /// A test control that holds every image request until it is released; `nil` (off) by
    /// default. When set, its control routes are served under `/gallery/test/`.
    public var imageGate: ImageGate?
    /// The clock the injected latency is measured on; tests pass a manual clock.
    public var clock: any Clock<Duration>
    /// The key the feed is signed with. A new, unsaved key by default; `emojiart gallery` keeps
    /// one in its data directory (see `SigningKeyFile`).
    public var signingKey: SigningKey
    /// How long a feed signature stays valid after it is made (its `expires`). Default one hour:
    /// long enough for clocks that differ and slow clients, short enough that a replayed feed
    /// goes stale.
    public var signatureLifetime: Duration
    /// The wall clock signatures, `Date` and `Last-Modified` are dated by; tests pass one they
    /// move.
    public var now: @Sendable () -> Date
    /// Every image's `Cache-Control`: `public, max-age=3600` by default (see
    /// ``init(host:port:seed:faults:imageGate:clock:signingKey:signatureLifetime:now:maxAge:cacheControl:revisionInterval:catalog:fastLane:)``).
    public var cacheControl: String
    /// The pieces: the book's 29 by default; more make the gallery a load generator.
    public var catalog: ArtCatalog
    /// How often the gallery publishes a revision (new bytes for a few pieces); `nil` (never) by
    /// default, as in the book. `.zero` publishes one only when `POST /gallery/test/revise`
    /// asks, a route served whenever this is set.
    public var revisionInterval: Duration?
    /// Answer `GET /gallery/image?N` on the event loop (`FastLane`), byte for byte as the route
    /// would; on by default, and never while ``faults`` or ``imageGate`` are on (then every
    /// image request goes through the route, which injects and holds).
    public var fastLane: Bool
    /// How long a connection may stay quiet (no complete request head, no request after the last
    /// answer) before the gallery closes it; 75 s by default (longer than the 60 s that nginx and
    /// AsyncHTTPClient keep an idle connection for, so a client never sends on one just closed),
    /// `nil` never. A client that opens connections and sends nothing, or half a head, cannot hold
    /// them (and the file descriptors) for ever.
    public var idleTimeout: TimeAmount? = .seconds(75)
    /// The time a client has to send a whole request, head and body, and the longest an answer
    /// may wait for a client that takes none of its bytes (an event stream's too); 30 s by
    /// default, `nil` never. Past either the connection is closed: a client trickling a request or
    /// not reading cannot hold a connection, however steadily it trickles.
    public var requestTimeout: TimeAmount? = .seconds(30)
    /// The most connections open at once; one more is closed as soon as it is accepted and counted
    /// (`gallery_connections_cut_total{reason="over_limit"}` in `/metrics`). `nil` (the default): the process's
    /// descriptor limit less room for the disk cache and origin connections of an app in the same process
    /// (`ConnectionLimits.defaultMaxConnections`).
    public var maxConnections: Int?
    /// The origin (`http://host:port`) the gallery's signed feed answers name as theirs (apps
    /// compare it with the gallery they meant to ask); `nil` (the default) names the bound
    /// address, ``host`` and the port bound. Set it when apps reach the gallery at another
    /// address: a name, a public address, or `0.0.0.0` bound.
    public var publicOrigin: String?

    /// The seed used when none is given: the same feed every start.
    public static let defaultSeed: UInt64 = 1_984

    /// Creates a configuration.
    /// - Parameters:
    ///   - maxAge: seconds clients may use an image without asking again, sent as
    ///     `Cache-Control: public, max-age=S`.
    ///   - cacheControl: the whole `Cache-Control` of images instead (`no-store`,
    ///     `max-age=60, stale-while-revalidate=30`, ...); `maxAge` is then unused.
    public init(
        host: String = "127.0.0.1", port: Int = 8080, seed: UInt64 = defaultSeed, faults: FaultInjection = .none,
        imageGate: ImageGate? = nil, clock: any Clock<Duration> = ContinuousClock(),
        signingKey: SigningKey = .init(), signatureLifetime: Duration = .seconds(3600),
        now: @escaping @Sendable () -> Date = { Date() }, maxAge: Int = 3600, cacheControl: String? = nil,
        revisionInterval: Duration? = nil, catalog: ArtCatalog = .book, fastLane: Bool = true
    ) {
        self.host = host
        self.port = port
        self.seed = seed
        self.faults = faults
        self.imageGate = imageGate
        self.clock = clock
        self.signingKey = signingKey
        self.signatureLifetime = signatureLifetime
        self.now = now
        self.cacheControl = cacheControl ?? "public, max-age=\(max(0, maxAge))"
        self.revisionInterval = revisionInterval
        self.catalog = catalog
        self.fastLane = fastLane
    }

    /// The fingerprint of ``signingKey``'s public key: its RFC 7638 JWK thumbprint.
    public var keyFingerprint: String { signingKey.fingerprint }
}

