import Foundation
public import HTTPCaching

/// An encoded image as the cache holds it: bytes, their content type and, when known, the
/// pixel size; and, for images from an HTTP origin, what the origin said about caching them.
/// A value type; `Sendable`.
///
/// Two images are equal when their bytes, content type and pixel size are: the cache's
/// bookkeeping (``cacheHeaders``, ``originalSHA256``) does not make a different image.
public struct Image: Sendable, Hashable {
    /// Width and height in pixels.
    public struct PixelSize: Sendable, Hashable, CustomStringConvertible {
        /// Width in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int

        /// Creates a size.
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }

        public var description: String { "\(width)x\(height)" }
    }

    /// The encoded bytes (PNG, JPEG, WebP, ...).
    public var data: [UInt8]
    /// The MIME type of `data`, e.g. `image/png`.
    public var contentType: String
    /// The pixel size, when a processor or the origin made it known; `nil` for originals
    /// fetched as they are (the cache does not decode images itself).
    public var pixelSize: PixelSize?
    /// What the origin said about caching the bytes (validators and freshness, RFC 9111); for a
    /// variant, what it said about the original the variant was made from, so both go stale
    /// together. `nil` for an image that did not come from HTTP: it stays fresh until evicted.
    public var cacheHeaders: CacheHeaders? {
        get { provenance?.cacheHeaders }
        set { provenance = Provenance.make(newValue, originalSHA256) }
    }
    /// Lowercase hex SHA-256 of the original bytes: of ``data`` for an original fetched by the
    /// pipeline, of the original it was made from for a variant. A variant whose original has
    /// other bytes now is never answered again.
    public var originalSHA256: String? {
        get { provenance?.originalSHA256 }
        set { provenance = Provenance.make(cacheHeaders, newValue) }
    }
    /// The two above, boxed: an image is copied on every hit, and the headers are large.
    private var provenance: Provenance?

    /// Whether ``cacheHeaders`` is set, read in place: a memory hit asks, and copying the
    /// headers out would cost it more than the question.
    var hasCacheHeaders: Bool { provenance?.cacheHeaders != nil }

    /// The freshness of ``cacheHeaders`` at `now`, read in place; `nil` when there are none.
    func freshness(at now: Date) -> Freshness? {
        provenance?.cacheHeaders?.freshness(at: now)
    }

    /// Whether ``cacheHeaders`` says `immutable`, read in place.
    var isImmutable: Bool { provenance?.cacheHeaders?.cacheControl.immutable ?? false }

    /// Where an image's bytes came from; immutable and shared between copies.
    private final class Provenance: Sendable {
        let cacheHeaders: CacheHeaders?
        let originalSHA256: String?

        init(_ cacheHeaders: CacheHeaders?, _ originalSHA256: String?) {
            self.cacheHeaders = cacheHeaders
            self.originalSHA256 = originalSHA256
        }

        static func make(_ cacheHeaders: CacheHeaders?, _ originalSHA256: String?) -> Provenance? {
            cacheHeaders == nil && originalSHA256 == nil ? nil : Provenance(cacheHeaders, originalSHA256)
        }
    }

    /// Creates an image.
    public init(
        data: [UInt8], contentType: String, pixelSize: PixelSize? = nil, cacheHeaders: CacheHeaders? = nil,
        originalSHA256: String? = nil
    ) {
        self.data = data
        self.contentType = contentType
        self.pixelSize = pixelSize
        provenance = Provenance.make(cacheHeaders, originalSHA256)
    }

    public static func == (lhs: Image, rhs: Image) -> Bool {
        lhs.data == rhs.data && lhs.contentType == rhs.contentType && lhs.pixelSize == rhs.pixelSize
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(data)
        hasher.combine(contentType)
        hasher.combine(pixelSize)
    }

    /// What the image costs in memory, in bytes.
    public var cost: Int { data.count + contentType.utf8.count + (provenance == nil ? 64 : 256) }
}
