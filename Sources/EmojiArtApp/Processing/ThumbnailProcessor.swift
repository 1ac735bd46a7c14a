public import ImageCache
public import Imaging
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
        imaging = Imaging(limits: limits)
    }

    /// Creates a processor for `size` x `size` thumbnails made from each original shrunk to
    /// `shrinkBox` (raised to `size` if smaller), kept in `shrinks` for the other processors
    /// that share it.
    public init(size: Int, format: OutputFormat = .png, shrinkBox: Int, sharing shrinks: ShrunkOriginals, limits: Imaging.Limits = .default) {
        self.size = size
        self.format = format
        self.shrinkBox = max(size, shrinkBox)
        self.shrinks = shrinks
        imaging = Imaging(limits: limits)
    }

    /// The app's 1x PNG thumbnail in a `size` box, as `sync` and the web app make it (the same
    /// cache key): from the original shrunk to the 2x box.
    public static func catalogThumbnail(size: Int) -> ThumbnailProcessor {
        ThumbnailProcessor(size: size, shrinkBox: size * 2, sharing: ShrunkOriginals())
    }

    /// `thumbnail-200-png`, or `thumbnail-200-of-400-avif60e2` when made from a larger shrink:
    /// part of the cache key.
    public var identifier: String {
        shrinkBox == size ? "thumbnail-\(size)-\(format)" : "thumbnail-\(size)-of-\(shrinkBox)-\(format)"
    }

    public func process(_ image: ImageCache.Image) async throws -> ImageCache.Image {
        let thumbnail: EncodedImage
        if let shrinks {
            let shrunk = try shrinks.shrunk(image, fitting: shrinkBox, imaging: imaging)
            thumbnail = try imaging.thumbnail(of: shrunk, fitting: size, format: format)
        } else {
            thumbnail = try imaging.thumbnail(image.data, fitting: size, format: format)
        }
        return ImageCache.Image(
            data: thumbnail.data, contentType: thumbnail.mimeType,
            pixelSize: .init(width: thumbnail.width, height: thumbnail.height)
        )
    }
}

/// Originals decoded lately (``Imaging/shrink(_:fitting:)``), shared by the
/// ``ThumbnailProcessor``s made with it, so an original's variants are made from one decode. Keyed by the original's SHA-256 and the box; the least recently used go
/// first past ``byteLimit``. Short-lived by design: the variants of one original are asked for
/// together (the warm-up asks for a piece's six at once), so a few megabytes hold them.
///
/// Two processors that miss the same original at the same moment both shrink it (the same
/// pixels; the second is kept): waiting for the first would hold a processing slot idle.
/// Thread-safe: one `Mutex`.
public final class ShrunkOriginals: Sendable {
    /// The most bytes of pixels kept.
    public let byteLimit: Int
    private struct Key: Hashable {
        var original: String
        var box: Int
    }
    private struct State {
        var entries: [Key: (image: ShrunkImage, cost: Int, lastUse: UInt64)] = [:]
        var bytes = 0
        var tick: UInt64 = 0
        var made = 0
        var reused = 0
    }
    private let state = Mutex(State())

    /// Creates an empty store keeping at most `byteLimit` bytes of decoded pixels: by default
    /// 16 MiB, twenty-odd of the gallery's decoded 360 x 650 PNGs or a hundred 400 px shrinks of
    /// JPEGs. Each is counted when it is decoded; the thumbnails' pixels kept with it (a box's,
    /// for all its formats) add about half again for a PNG kept whole at the app's boxes. A
    /// larger image is not kept: each of its variants decodes it again.
    public init(byteLimit: Int = 16 << 20) {
        self.byteLimit = byteLimit
    }

    /// How many shrinks were made, and how many times a kept one was used instead.
    public var counts: (made: Int, reused: Int) { state.withLock { ($0.made, $0.reused) } }

    /// `original` shrunk to fit `box`: kept, or made now with `imaging` and kept.
    /// - Throws: what ``Imaging/shrink(_:fitting:)`` throws.
    public func shrunk(_ original: ImageCache.Image, fitting box: Int, imaging: Imaging) throws -> ShrunkImage {
        let key = Key(original: original.originalSHA256 ?? SHA256Hex.digest(original), box: box)
        let kept: ShrunkImage? = state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            state.tick += 1
            state.entries[key]!.lastUse = state.tick
            state.reused += 1
            return entry.image
        }
        if let kept { return kept }
        let made = try imaging.shrink(original.data, fitting: box)
        state.withLock { state in
            state.made += 1
            let cost = made.byteCount
            guard cost <= byteLimit else { return }
            if let replaced = state.entries[key] { state.bytes -= replaced.cost }
            state.tick += 1
            state.entries[key] = (made, cost, state.tick)
            state.bytes += cost
            while state.bytes > byteLimit, let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                state.entries[oldest.key] = nil
                state.bytes -= oldest.value.cost
            }
        }
        return made
    }
}
