public import ImageCache
public import Imaging
import NIOCore
import Synchronization

/// Makes the app's variants with libvips: an image that fits in a `size` x `size` box, never
/// upscaled, in `format`. The cache calls it off its actors; it is safe to call from many tasks
/// at once.
///
/// A processor made with a larger `shrinkBox` and a ``ShrunkOriginals`` it shares with others
/// (the app's 1x and 2x in every format) decodes each original once (``Imaging/shrink(_:fitting:)``:
/// a PNG kept whole, a JPEG or WebP shrunk to `shrinkBox`) and makes its variant from those
/// pixels (``Imaging/thumbnail(of:fitting:format:)``): the variants of one original cost one
/// decode, and then a resize and an encode each. Its output does not depend on which variant
/// came first: every variant is made from the same pixels, kept or made again.
public struct ThumbnailProcessor: ImageProcessing {
    /// Side of the bounding box in pixels.
    public let size: Int
    /// The output encoding.
    public let format: OutputFormat
    /// The box each original is shrunk to before this processor's own box is made from it: at
    /// least ``size``; equal when the processor makes its variant from the original directly.
    public let shrinkBox: Int
    /// The shrunk originals it shares, if it makes its variant from them.
    let shrinks: ShrunkOriginals?
    private let imaging: Imaging

    /// Creates a processor for `size` x `size` thumbnails, made from the original itself.
    public init(size: Int, format: OutputFormat = .png, limits: Imaging.Limits = .default) {
        self.size = size
        self.format = format
        shrinkBox = size
        shrinks = nil
        streamsWhenNothingIsKept = false
        imaging = Imaging(limits: limits)
    }

    /// Creates a processor for `size` x `size` thumbnails made from each original shrunk to
    /// `shrinkBox` (raised to `size` if smaller), kept in `shrinks` for the other processors
    /// that share it.
    /// With `streamsWhenNothingIsKept`, a PNG or GIF original that nothing has decoded yet (none
    /// kept, none being decoded) is streamed from the original instead (the same bytes,
    /// ``Imaging/keepsWhole(_:)``), leaving the decode to the variants that follow: for the one
    /// variant made while somebody waits, whose answer should not pay for the others.
    public init(
        size: Int, format: OutputFormat = .png, shrinkBox: Int, sharing shrinks: ShrunkOriginals,
        streamsWhenNothingIsKept: Bool = false, limits: Imaging.Limits = .default
    ) {
        self.size = size
        self.format = format
        self.shrinkBox = max(size, shrinkBox)
        self.shrinks = shrinks
        self.streamsWhenNothingIsKept = streamsWhenNothingIsKept
        imaging = Imaging(limits: limits)
    }

    /// Whether a PNG or GIF original nothing has decoded yet is streamed (see
    /// ``init(size:format:shrinkBox:sharing:streamsWhenNothingIsKept:limits:)``).
    public let streamsWhenNothingIsKept: Bool

    /// The app's 1x PNG thumbnail in a `size` box, as `sync` and the web app make it (the same
    /// processor, so the same cache key and bytes).
    public static func catalogThumbnail(size: Int) -> ThumbnailProcessor {
        AppServices.processors(boxes: [.thumbs: size], formats: [.png])[VariantKind(route: .thumbs, density: 1, format: .png)]!
    }

    /// `thumbnail-200-png`, or `thumbnail-200-of-400-avif60e2` when made from a larger shrink:
    /// part of the cache key.
    public var identifier: String {
        shrinkBox == size ? "thumbnail-\(size)-\(format)" : "thumbnail-\(size)-of-\(shrinkBox)-\(format)"
    }

    public func process(_ image: ImageCache.Image) async throws -> ImageCache.Image {
        // The original is read in place (its signature, then libvips), and the output copied once,
        // from libvips' buffer into the image's.
        if let shrinks,
           !(streamsWhenNothingIsKept && image.withUnsafeBytes { Imaging.keepsWhole($0) } && shrinks.isUntouched(image, fitting: shrinkBox)),
           let shrunk = try await shrinks.shrunk(image, fitting: shrinkBox, imaging: imaging) {
            return try imaging.thumbnail(of: shrunk, fitting: size, format: format, Self.image(of:))
        }
        return try image.withUnsafeBytes { try imaging.thumbnail($0, fitting: size, format: format, Self.image(of:)) }
    }

    /// The cache's image of libvips' output: its bytes copied once, into a buffer of their own.
    static func image(of encoded: EncodedBytes) -> ImageCache.Image {
        var buffer = ByteBufferAllocator().buffer(capacity: encoded.bytes.count)
        buffer.writeBytes(encoded.bytes)
        return ImageCache.Image(
            buffer: buffer, contentType: encoded.mimeType, pixelSize: .init(width: encoded.width, height: encoded.height)
        )
    }
}

/// Originals decoded lately (``Imaging/shrink(_:fitting:)``), shared by the
/// ``ThumbnailProcessor``s made with it, so an original's variants are made from one decode.
/// Keyed by the image's `originalSHA256` (the pipeline's verified digest; the bytes' own digest
/// when it has none) and the box; the least recently used go first past ``byteLimit`` or
/// ``entryLimit``. Short-lived by design: the variants of one original are asked for together
/// (the warm-up asks for a piece's six at once), so a few megabytes hold them.
///
/// One decode, however many ask at once: the first decodes, the others wait for its pixels
/// (holding their processing slot, not a thread). A PNG or GIF too large to keep whole
/// (``Imaging/shrinkCost(of:fitting:)`` over ``byteLimit``) is decoded once, streaming, and kept
/// shrunk to the box, as a JPEG is: its variants cost one decode, not one each. Only an original
/// whose box alone would not fit is not kept: each variant is then made from the original,
/// streaming, with the same bytes. Processors sharing a store should share their `Imaging.Limits`.
/// Thread-safe: one `Mutex`.
public final class ShrunkOriginals: Sendable {
    /// The most bytes of pixels kept: each entry counts its pixels and its boxes' (at least
    /// 64 KiB, for what libvips keeps beside the pixels).
    public let byteLimit: Int
    /// The most originals kept.
    public let entryLimit: Int

    private struct Key: Hashable {
        var original: String
        var box: Int
    }
    private enum Entry {
        case making(waiters: [CheckedContinuation<ShrunkImage?, any Error>])
        case made(ShrunkImage, lastUse: UInt64)
    }
    private enum Claim {
        case kept(ShrunkImage)
        case make
        case wait
    }
    private struct State {
        var entries: [Key: Entry] = [:]
        var tick: UInt64 = 0
        var made = 0
        var reused = 0
    }
    private let state = Mutex(State())

    /// Creates an empty store keeping at most `byteLimit` bytes of decoded pixels and
    /// `entryLimit` originals: by default 16 MiB, about fifteen of the gallery's 360 x 650 PNGs
    /// with their 1x and 2x pixels, or forty 400 px shrinks of JPEGs.
    public init(byteLimit: Int = 16 << 20, entryLimit: Int = 256) {
        self.byteLimit = byteLimit
        self.entryLimit = entryLimit
    }

    /// How many originals were decoded, and how many times a kept one was used instead (or
    /// waited for).
    public var counts: (made: Int, reused: Int) { state.withLock { ($0.made, $0.reused) } }

    /// `original` decoded for `box`: kept, being decoded (waited for), or decoded now with
    /// `imaging` and kept (a PNG or GIF too large to keep whole, shrunk to the box); `nil` when
    /// even the box's pixels would not fit, whose variants are made from the original itself.
    /// - Throws: what ``Imaging/shrink(_:fitting:)`` throws (to every caller waiting for the
    ///   same decode).
    public func shrunk(_ original: ImageCache.Image, fitting box: Int, imaging: Imaging) async throws -> ShrunkImage? {
        let key = Key(original: original.originalSHA256 ?? SHA256Hex.digest(original), box: box)
        while true {
            switch state.withLock({ Self.claim(key, in: &$0) }) {
            case let .kept(image):
                return image
            case .make:
                let made: ShrunkImage
                do {
                    // The original's bytes read in place, where the fetcher received them.
                    let shrunk = try original.withUnsafeBytes { try imaging.shrink($0, fitting: box, keepingAtMost: byteLimit) }
                    guard let decoded = shrunk else {
                        // Not decoded whole: this caller streams, and each waiter asks again (and streams).
                        for waiter in state.withLock({ Self.abandon(key, in: &$0) }) { waiter.resume(returning: nil) }
                        return nil
                    }
                    made = decoded
                } catch {
                    for waiter in state.withLock({ Self.abandon(key, in: &$0) }) { waiter.resume(throwing: error) }
                    throw error
                }
                for waiter in state.withLock({ keep(made, for: key, in: &$0) }) { waiter.resume(returning: made) }
                return made
            case .wait:
                let waited: ShrunkImage? = try await withCheckedThrowingContinuation { continuation in
                    if let now = state.withLock({ Self.wait(key, continuation, in: &$0) }) { continuation.resume(with: now) }
                }
                if let waited { return waited }  // Evicted already, or too large to keep: ask again.
            }
        }
    }

    /// Whether nothing is kept of `original` for `box`, and nobody is decoding it.
    public func isUntouched(_ original: ImageCache.Image, fitting box: Int) -> Bool {
        let key = Key(original: original.originalSHA256 ?? SHA256Hex.digest(original), box: box)
        return state.withLock { $0.entries[key] == nil }
    }

    private static func claim(_ key: Key, in state: inout State) -> Claim {
        switch state.entries[key] {
        case let .made(image, _):
            state.tick += 1
            state.entries[key] = .made(image, lastUse: state.tick)
            state.reused += 1
            return .kept(image)
        case .making:
            state.reused += 1
            return .wait
        case nil:
            state.entries[key] = .making(waiters: [])
            return .make
        }
    }

    /// Adds `continuation` to the waiters of `key`'s decode; or, when it ended meanwhile, what
    /// to resume it with now (`nil` pixels: ask again).
    private static func wait(
        _ key: Key, _ continuation: CheckedContinuation<ShrunkImage?, any Error>, in state: inout State
    ) -> Result<ShrunkImage?, any Error>? {
        switch state.entries[key] {
        case var .making(waiters):
            waiters.append(continuation)
            state.entries[key] = .making(waiters: waiters)
            return nil
        case let .made(image, _):
            return .success(image)
        case nil:
            return .success(nil)
        }
    }

    private static func abandon(_ key: Key, in state: inout State) -> [CheckedContinuation<ShrunkImage?, any Error>] {
        guard case let .making(waiters) = state.entries.removeValue(forKey: key) else { return [] }
        return waiters
    }

    /// Keeps `image` for `key` and drops the least recently used past the limits; returns the
    /// decode's waiters.
    private func keep(_ image: ShrunkImage, for key: Key, in state: inout State) -> [CheckedContinuation<ShrunkImage?, any Error>] {
        var waiters: [CheckedContinuation<ShrunkImage?, any Error>] = []
        if case let .making(waiting) = state.entries[key] { waiters = waiting }
        state.made += 1
        state.tick += 1
        state.entries[key] = .made(image, lastUse: state.tick)
        // Costs are read now: each entry's boxes were kept since it was.
        var made = state.entries.compactMap { key, entry -> (key: Key, cost: Int, lastUse: UInt64)? in
            guard case let .made(image, lastUse) = entry else { return nil }
            return (key, max(image.byteCount, 64 << 10), lastUse)
        }
        var bytes = made.reduce(0) { $0 + $1.cost }
        made.sort { $0.lastUse < $1.lastUse }
        var index = 0
        while bytes > byteLimit || made.count - index > entryLimit, index < made.count {
            state.entries[made[index].key] = nil
            bytes -= made[index].cost
            index += 1
        }
        return waiters
    }
}
