import FastLane
import HTTPTypes
import ImageCache
import NIOCore
import Synchronization

/// What the image routes know about each piece's variants, made once and reused by every answer:
/// the variant's request (parsing its URL on every request would cost more than the memory hit it
/// leads to), its `v=` and its ETag. No bytes: a variant's prepared answer lives in memory with
/// its image (``PreparedAnswer``).
///
/// An entry is used only while the feed has the checksum it was made for.
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
    }

    let state = Mutex([Key: Entry]())

    /// The entry of `key` if it was made for the feed entry with `checksum`.
    func entry(_ key: Key, checksum: String) -> Entry? {
        guard let entry = state.withLock({ $0[key] }), entry.variant.checksum == checksum else { return nil }
        return entry
    }

    /// Adds `variant` for `key`, replacing what was there (made for another checksum).
    func add(_ variant: ServedVariant, for key: Key) {
        state.withLock { $0[key] = Entry(variant: variant) }
    }

    /// The ETag known for `image` of `variant`, if any.
    func etag(of image: Image, _ variant: ServedVariant) -> String? {
        guard let source = image.originalSHA256 else { return nil }
        return state.withLock { entries in
            guard let entry = entries[variant.key], entry.variant === variant, let etag = entry.etag,
                  etag.source == source, etag.bytes == image.byteCount
            else { return nil }
            return etag.value
        }
    }

    /// Keeps `etag` of `image`, if `variant` is still the entry and the image knows its original.
    func keep(etag: String, of image: Image, for variant: ServedVariant) {
        guard let source = image.originalSHA256 else { return }
        state.withLock { entries in
            guard entries[variant.key]?.variant === variant else { return }
            entries[variant.key]?.etag = ETag(source: source, bytes: image.byteCount, value: etag)
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
    /// The request through the pipeline (high priority: a person is looking).
    let request: ImageRequest
    /// The `v=` of immutable URLs (see ``AppServices/version(_:processors:)``).
    let version: String

    init(key: ServedVariants.Key, checksum: String, request: ImageRequest, version: String) {
        self.key = key
        self.checksum = checksum
        self.request = request
        self.version = version
    }
}

