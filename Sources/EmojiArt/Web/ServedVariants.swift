import FastLane
import HTTPTypes
import ImageCache
import NIOCore
import Synchronization

/// What the image routes know about each piece's variants, made once and reused by every answer:
/// the variant's request (parsing its URL on every request would cost more than the memory hit it
/// leads to), its `v=`, its ETag, and its prepared answer.
///
/// An entry is used only while the feed has the checksum it was made for. A prepared answer is
/// used only for the very bytes it was made from (the same array as memory's entry, compared by
/// identity, not content), so a variant made again, or evicted and loaded again, gets a new one.
/// A prepared answer holds its body (a copy of the bytes) and memory's array (which it keeps alive
/// after memory evicts it); what all of them hold is kept under ``preparedBudget``, past which
/// answers are built per request.
final class ServedVariants: Sendable {
    /// A piece's variant: the route that serves it.
    struct Key: Hashable {
        let piece: Int
        let route: ImageRoute
    }

    /// The ETag of a variant's bytes, with the original digest and size it was computed for: a
    /// variant is a function of its original's bytes and its processor, so the SHA-256 of its
    /// bytes is computed once per original, not once per load.
    struct ETag {
        let source: String
        let bytes: Int
        let value: String
    }

    struct Entry {
        let variant: ServedVariant
        var etag: ETag?
        var prepared: PreparedAnswer?
    }

    struct State {
        var entries: [Key: Entry] = [:]
        var preparedBytes = 0
    }

    /// The most bytes prepared answers hold at once (see ``PreparedAnswer/heldBytes``).
    let preparedBudget: Int
    let state = Mutex(State())

    init(preparedBudget: Int = 64 << 20) {
        self.preparedBudget = preparedBudget
    }

    /// The entry of `key` if it was made for the feed entry with `checksum`.
    func entry(_ key: Key, checksum: String) -> Entry? {
        guard let entry = state.withLock({ $0.entries[key] }), entry.variant.checksum == checksum else { return nil }
        return entry
    }

    /// Adds `variant` for `key`, replacing what was there (made for another checksum).
    func add(_ variant: ServedVariant, for key: Key) {
        state.withLock { state in
            state.preparedBytes -= state.entries[key]?.prepared?.heldBytes ?? 0
            state.entries[key] = Entry(variant: variant)
        }
    }

    /// The ETag known for `image` of `variant`, if any.
    func etag(of image: Image, _ variant: ServedVariant) -> String? {
        guard let source = image.originalSHA256 else { return nil }
        return state.withLock { state in
            guard let entry = state.entries[variant.key], entry.variant === variant, let etag = entry.etag,
                  etag.source == source, etag.bytes == image.data.count
            else { return nil }
            return etag.value
        }
    }

    /// Keeps `etag` of `image` and its prepared answer, if `variant` is still the entry and the
    /// budget allows the answer's body.
    func keep(etag: String, of image: Image, prepared: PreparedAnswer, for variant: ServedVariant) {
        state.withLock { state in
            guard var entry = state.entries[variant.key], entry.variant === variant else { return }
            if let source = image.originalSHA256 {
                entry.etag = ETag(source: source, bytes: image.data.count, value: etag)
            }
            let old = entry.prepared?.heldBytes ?? 0
            let new = prepared.heldBytes
            if state.preparedBytes - old + new <= preparedBudget {
                entry.prepared = prepared
                state.preparedBytes += new - old
            }
            state.entries[variant.key] = entry
        }
    }
}

/// A piece's variant as the routes serve it, for one feed checksum.
final class ServedVariant: Sendable {
    let key: ServedVariants.Key
    /// The feed entry's checksum this was made for.
    let checksum: String
    /// The request through the database (high priority: a person is looking).
    let request: ImageRequest
    /// The `v=` of immutable URLs (see ``AppServices/version(_:processor:)``).
    let version: String

    init(key: ServedVariants.Key, checksum: String, request: ImageRequest, version: String) {
        self.key = key
        self.checksum = checksum
        self.request = request
        self.version = version
    }
}

/// A variant's answer made once for the bytes memory holds: its ETag, its body and its heads
/// (status and header fields, which the fast lane keeps encoded), for the mode's plain
/// `Cache-Control` and, with a current `v=`, for the immutable one.
final class PreparedAnswer: Sendable {
    /// One `Cache-Control`'s heads: 200's and 304's.
    struct Heads: Sendable {
        let ok: FastLane.Head
        let notModified: FastLane.Head
    }

    /// The bytes it was made from, held so the identity comparison in ``isMade(from:)`` is sound.
    let data: [UInt8]
    let contentType: String
    let etag: String
    let body: ByteBuffer
    let plain: Heads
    let versioned: Heads

    init(image: Image, etag: String, cacheControl: ImageCacheControl) {
        data = image.data
        contentType = image.contentType
        self.etag = etag
        body = ByteBuffer(bytes: image.data)
        func heads(_ cacheControl: String) -> Heads {
            // In this order, the order the route has always sent; `nosniff` last, where the
            // router's middleware adds it to every answer (see `BrowserGuardMiddleware`).
            let validators = [HTTPField(name: .eTag, value: etag), HTTPField(name: .cacheControl, value: cacheControl)]
            let noSniff = HTTPField(name: .xContentTypeOptions, value: "nosniff")
            let ok = HTTPFields(validators + [
                HTTPField(name: .contentType, value: Self.servedContentType(image.contentType)),
                HTTPField(name: .contentLength, value: String(image.data.count)),
                noSniff,
            ])
            return Heads(
                ok: FastLane.Head(status: .ok, headerFields: ok),
                notModified: FastLane.Head(status: .notModified, headerFields: HTTPFields(validators + [noSniff]))
            )
        }
        plain = heads(cacheControl.plain)
        versioned = heads(cacheControl.versioned)
    }

    /// The image types an image route answers with as they are stored. Everything else is sent as
    /// `application/octet-stream`: an entry's type is bytes read from disk, and one that says
    /// `text/html` or `image/svg+xml` (both can run script) must not make the app's origin serve
    /// a page; with `nosniff` the browser then guesses nothing either.
    static let servableTypes: Set<String> = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]

    /// The `Content-Type` an image answer carries for a stored `contentType`: the stored one when
    /// its media type (before any parameter, in any case) is one of ``servableTypes``, else
    /// `application/octet-stream`.
    static func servedContentType(_ contentType: String) -> String {
        let mediaType = String(contentType.prefix { $0 != ";" }.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()).lowercased()
        return servableTypes.contains(mediaType) ? contentType : "application/octet-stream"
    }

    /// The bytes this answer keeps alive: its body and the image's array.
    var heldBytes: Int { body.readableBytes + data.count }

    /// Whether `image` holds the very bytes this was made from: the same array storage, which
    /// this answer keeps alive, so it cannot have been reused for other bytes.
    func isMade(from image: Image) -> Bool {
        guard image.data.count == data.count, image.contentType == contentType else { return false }
        return image.data.withUnsafeBufferPointer { a in data.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
    }

    /// The answer, `versioned` or not: 200 with the bytes, or 304 when `notModified`.
    func answer(versioned isVersioned: Bool, notModified: Bool) -> FastLane.Answer {
        let heads = isVersioned ? versioned : plain
        return notModified ? FastLane.Answer(head: heads.notModified) : FastLane.Answer(head: heads.ok, body: body)
    }
}

/// The two `Cache-Control` values an image answer can have in one ``HTTPCacheMode``.
struct ImageCacheControl: Sendable {
    /// Without a current `v=` (or in modes other than immutable).
    let plain: String
    /// With the current `v=` in ``HTTPCacheMode/immutable``.
    let versioned: String

    init(_ mode: HTTPCacheMode) {
        plain = mode == .noStore ? "no-store" : "no-cache"
        versioned = mode == .immutable ? "public, max-age=31536000, immutable" : plain
    }
}
