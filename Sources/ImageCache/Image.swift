import Foundation
public import HTTPCaching
package import NIOCore

/// An encoded image as the cache holds it: bytes, their content type and, when known, the
/// pixel size; and, for images from an HTTP origin, what the origin said about caching them.
/// A value type; `Sendable`.
///
/// Two images are equal when their bytes, content type and pixel size are: the cache's
/// bookkeeping (``cacheHeaders``, ``originalSHA256``, ``attachment``) does not make a different
/// image.
///
/// The bytes are held once, in the buffer a server writes from (SwiftNIO's `ByteBuffer`, shared
/// by every copy of the image): ``withUnsafeBytes(_:)`` and ``byteCount`` read them in place;
/// ``data`` is a copy.
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

    /// The encoded bytes (PNG, JPEG, WebP, ...), as an array: a copy of the image's buffer, made on
    /// each read. Setting them drops the ``attachment``.
    public var data: [UInt8] {
        get { Array(buffer: buffer) }
        set { replaceBytes(with: newValue) }
    }
    /// The encoded bytes as they are held: a server answers with them without copying them
    /// (for this package's servers; the public API reads them with ``withUnsafeBytes(_:)``).
    package private(set) var buffer: ByteBuffer
    /// The number of encoded bytes.
    public var byteCount: Int { buffer.readableBytes }
    /// The MIME type of the bytes, e.g. `image/png`. Setting it drops the ``attachment``.
    public var contentType: String {
        didSet { attachment = nil }
    }
    /// What a user of the memory cache made from these very bytes and keeps with them (a
    /// server's encoded answer head, say): set by ``MemoryCache/attach(_:toBytesOf:forKey:)``,
    /// counted in ``cost``, evicted with the image, and dropped when the bytes or their type
    /// change. `nil` for an image as it was loaded.
    public internal(set) var attachment: (any ImageAttachment)?
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

    /// Creates an image of `data` (copied once into the image's buffer).
    public init(
        data: [UInt8], contentType: String, pixelSize: PixelSize? = nil, cacheHeaders: CacheHeaders? = nil,
        originalSHA256: String? = nil
    ) {
        self.init(buffer: ByteBuffer(bytes: data), contentType: contentType, pixelSize: pixelSize, cacheHeaders: cacheHeaders,
                  originalSHA256: originalSHA256)
    }

    /// Creates an image of the readable bytes of `buffer`, without copying them.
    package init(
        buffer: ByteBuffer, contentType: String, pixelSize: PixelSize? = nil, cacheHeaders: CacheHeaders? = nil,
        originalSHA256: String? = nil
    ) {
        self.buffer = buffer
        self.contentType = contentType
        self.pixelSize = pixelSize
        provenance = Provenance.make(cacheHeaders, originalSHA256)
    }

    /// Replaces the bytes with one copy of `bytes`, and drops the ``attachment``.
    mutating func replaceBytes(with bytes: some Sequence<UInt8>) {
        buffer = ByteBuffer(bytes: bytes)
        attachment = nil
    }

    /// Calls `body` with the encoded bytes, in place.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try buffer.withUnsafeReadableBytes(body)
    }

    /// Whether `other` holds these very bytes: the same storage, not merely equal bytes. (Each
    /// side keeps its storage alive, so the same address is the same storage.)
    public func sharesBytes(with other: Image) -> Bool {
        guard byteCount == other.byteCount else { return false }
        return withUnsafeBytes { mine in other.withUnsafeBytes { theirs in mine.baseAddress == theirs.baseAddress } }
    }

    public static func == (lhs: Image, rhs: Image) -> Bool {
        lhs.buffer == rhs.buffer && lhs.contentType == rhs.contentType && lhs.pixelSize == rhs.pixelSize
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(buffer)
        hasher.combine(contentType)
        hasher.combine(pixelSize)
    }

    /// What the image costs in memory, in bytes: the storage its bytes take (SwiftNIO allocates a
    /// buffer's storage in powers of two: 17 KB of bytes take 32 KB), its bookkeeping, and its
    /// ``attachment``'s cost.
    public var cost: Int {
        buffer.storageCapacity + contentType.utf8.count + (provenance == nil ? 64 : 256) + (attachment?.cost ?? 0)
    }
}

/// Something made from an image's bytes and kept with them in memory (see
/// ``Image/attachment``): an immutable object, so every copy of the image shares it.
public protocol ImageAttachment: AnyObject, Sendable {
    /// The bytes it holds beyond the image's own, counted in the memory cache's budget.
    var cost: Int { get }
}
