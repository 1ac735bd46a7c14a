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
    /// A piece's variant: the route, density and format that serve it.
    struct Key: Hashable {
        let piece: Int
        let kind: VariantKind
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

/// What an image URL and the request's `Accept` name, piece aside: the route (its box), the
/// density (`/thumbs/N` is 1x, `/thumbs/2x/N` 2x) and the format negotiated.
struct VariantKind: Hashable, Sendable {
    let route: ImageRoute
    let density: Int
    let format: ServedFormat

    /// The densities the routes serve.
    static let densities = [1, 2]
}

/// A piece's variant as the routes serve it, for one feed checksum.
final class ServedVariant: Sendable {
    let key: ServedVariants.Key
    /// The feed entry's checksum this was made for.
    let checksum: String
    /// The request through the database (high priority: a person is looking).
    let request: ImageRequest
    /// The `v=` of immutable URLs (see ``AppServices/version(_:box:formats:)``).
    let version: String

    init(key: ServedVariants.Key, checksum: String, request: ImageRequest, version: String) {
        self.key = key
        self.checksum = checksum
        self.request = request
        self.version = version
    }
}

