import FastLane
import HTTPTypes
import ImageCache
import NIOCore
import Synchronization

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
