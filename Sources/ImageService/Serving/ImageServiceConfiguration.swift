/// How an image service runs: who may ask (signing), what it may fetch (``SourcePolicy``), what
/// it decodes, how long its answers may be kept, and where it is mounted.
///
/// The names follow imgproxy's settings (`IMGPROXY_KEY`, `IMGPROXY_ALLOWED_SOURCES`,
/// `IMGPROXY_MAX_SRC_RESOLUTION`, `IMGPROXY_TTL`, …), so a deployment's settings carry over; the
/// `emojiart images serve` command reads them from the environment and from its flags.
public struct ImageServiceConfiguration: Sendable {
    /// Whether request paths must be signed, and with which key and salt.
    public var signing: RequestDecoder.Configuration.Signing
    /// Presets by name, each a path of options such as `rs:fill:300:300/q:80`; `default` applies
    /// to every request first, as in imgproxy.
    public var presets: [String: String]
    /// Which sources may be fetched, and how.
    public var sources: SourcePolicy
    /// The largest source resolution decoded, in megapixels; a source above it is refused from
    /// its header, before any decode (imgproxy's `IMGPROXY_MAX_SRC_RESOLUTION`, 50 by default).
    public var maxSourceMegapixels: Double
    /// The most frames an animated source may declare (100 by default); only the first frame is
    /// processed, and a source with more is refused from its header, before decoding.
    public var maxAnimationFrames: Int
    /// The longest the processing of one source may take (decode, steps, encode), 10 s by default
    /// (imgproxy's `IMGPROXY_TIMEOUT`): past it libvips stops and the answer is 503. The failure
    /// is remembered as the cache remembers any processing failure (5 minutes), so asking again
    /// costs nothing. The source's fetch has its own limit (``SourcePolicy/timeout``).
    public var processingTimeLimit: Duration = .seconds(10)
    /// How long clients and proxies may keep an answer, in seconds (`Cache-Control: public,
    /// max-age`; imgproxy's `IMGPROXY_TTL`, a year by default); a URL's `expires` shortens it.
    public var ttl: Int
    /// Whether AVIF is offered to clients that name `image/avif` in `Accept` when the URL names
    /// no format (and this libvips can write it); WebP likewise.
    public var offersAVIF: Bool
    /// Whether WebP is offered to clients that name `image/webp` in `Accept`.
    public var offersWebP: Bool
    /// The path the service is mounted at, without a trailing `/`: empty for a server of its
    /// own, `/img` inside the app. Not part of what is signed (as imgproxy's
    /// `IMGPROXY_PATH_PREFIX`).
    public var pathPrefix: String

    /// A configuration with imgproxy's defaults.
    public init(
        signing: RequestDecoder.Configuration.Signing, sources: SourcePolicy, presets: [String: String] = [:],
        maxSourceMegapixels: Double = 50, maxAnimationFrames: Int = 100, ttl: Int = 31_536_000,
        offersAVIF: Bool = true, offersWebP: Bool = true, pathPrefix: String = ""
    ) {
        self.signing = signing
        self.sources = sources
        self.presets = presets
        self.maxSourceMegapixels = maxSourceMegapixels
        self.maxAnimationFrames = maxAnimationFrames
        self.ttl = ttl
        self.offersAVIF = offersAVIF
        self.offersWebP = offersWebP
        self.pathPrefix = pathPrefix
    }
}
