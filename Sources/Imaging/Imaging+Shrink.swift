import CVips

/// An image decoded and shrunk once, kept in memory to make several thumbnails of it: each
/// format at its box, and smaller boxes (the 1x of a 2x) from the same pixels, without decoding
/// or shrinking the original again. Made by ``Imaging/shrink(_:fitting:)``; used by
/// ``Imaging/thumbnail(of:fitting:format:)``.
///
/// An image with alpha (PNG, GIF) that was shrunk is kept premultiplied by alpha in 8 bits, as
/// ``Imaging/thumbnail(_:fitting:format:)`` resizes it, so a smaller box is resized from
/// premultiplied pixels too and no colour bleeds from transparent pixels.
///
/// `Sendable`: the pixels are a libvips image in memory, which libvips never changes after it is
/// made and lets any number of threads read at once (each thumbnail builds its own operations on
/// it); the class holds nothing else that changes.
public final class ShrunkImage: @unchecked Sendable {
    /// What the original's header said.
    public let original: ImageInfo
    /// The side of the box it was shrunk to fit.
    public let box: Int
    /// The pixels, in memory.
    let pixels: VipsImage
    /// Whether `pixels` are premultiplied by alpha (8-bit).
    let premultiplied: Bool

    init(original: ImageInfo, box: Int, pixels: VipsImage, premultiplied: Bool) {
        self.original = original
        self.box = box
        self.pixels = pixels
        self.premultiplied = premultiplied
    }

    /// Width of the shrunk pixels.
    public var width: Int { pixels.width }
    /// Height of the shrunk pixels.
    public var height: Int { pixels.height }
    /// The memory the pixels take, in bytes.
    public var byteCount: Int { pixels.width * pixels.height * pixels.bands * pixels.bytesPerSample }
}

extension Imaging {
    /// Decodes `data` and shrinks it to fit inside `size` x `size` once, keeping the pixels in
    /// memory, so that ``thumbnail(of:fitting:format:)`` makes each thumbnail of that box or a
    /// smaller one (every format, the 1x of a 2x) at the cost of its encode alone.
    ///
    /// The pixels are the ones ``thumbnail(_:fitting:format:)`` encodes at `size`: a thumbnail
    /// at this box is the same image either way. Loading is strict: a truncated or corrupt input
    /// fails here. Synchronous CPU work; safe to call from many tasks at once.
    /// - Throws: what ``thumbnail(_:fitting:format:)`` throws for the input and the box.
    public func shrink(_ data: [UInt8], fitting size: Int) throws(Error) -> ShrunkImage {
        try Self.check(width: size, height: size, format: .png)
        return try withBytes(data) { (bytes) throws(Error) -> ShrunkImage in
            let info = try probe(bytes)
            let corrupt = { (detail: String) in Error.corrupt(format: info.format, detail: detail) }
            let premultiplied = try premultipliedThumbnail(bytes, info: info, width: size, height: size, failure: corrupt)
            let lazy: VipsImage
            if let premultiplied {
                lazy = premultiplied
            } else {
                let mutableBase = UnsafeMutableRawPointer(mutating: bytes.baseAddress!)
                lazy = try VipsImage.make("thumbnail", failure: corrupt) {
                    cvips_thumbnail_buffer(mutableBase, bytes.count, $0, Int32(size), Int32(size), "fail_on=truncated")
                }
            }
            // Every pixel decoded now (a truncated input fails here), into memory the image owns.
            let pixels = try VipsImage.make("decode", failure: corrupt) { cvips_copy_memory(lazy.pointer, $0) }
            return ShrunkImage(original: info, box: size, pixels: pixels, premultiplied: premultiplied != nil)
        }
    }

    /// Makes a thumbnail of `shrunk`'s original that fits inside `size` x `size` (at most the box
    /// it was shrunk to), then encodes it, without decoding the original again.
    ///
    /// At the shrunk box it is the image ``thumbnail(_:fitting:format:)`` makes. A smaller box
    /// is resized (Lanczos-3) from the shrunk pixels to ``fittedSize(width:height:boxWidth:boxHeight:)``
    /// of the original: within a fraction of a level of a thumbnail made from the original (0.2
    /// to 0.3 on the gallery's art at 200 px from 400). The PNG settings are the ones
    /// ``thumbnail(_:fitting:format:)`` picks for the original. Safe to call from many tasks at once
    /// on the same `shrunk`.
    /// - Throws: ``Error/invalidArgument(_:)`` for a box larger than `shrunk`'s or an encoder
    ///   setting out of range, ``Error/encodeFailed(format:detail:)``.
    public func thumbnail(of shrunk: ShrunkImage, fitting size: Int, format: OutputFormat = .png) throws(Error) -> EncodedImage {
        try Self.check(width: size, height: size, format: format)
        guard size <= shrunk.box else {
            throw .invalidArgument("a thumbnail of \(size) px cannot be made from pixels shrunk to \(shrunk.box) px: shrink to the largest box first")
        }
        let info = shrunk.original
        let failure = { (detail: String) in Error.encodeFailed(format: format.description, detail: detail) }
        let base = shrunk.pixels
        var (width, height) = Self.fittedSize(width: info.width, height: info.height, boxWidth: size, boxHeight: size)
        if (base.width > base.height) != (width > height), base.width != base.height {
            swap(&width, &height)  // turned by its EXIF orientation on load
        }
        let image: VipsImage
        if size == shrunk.box || (width >= base.width && height >= base.height) {
            image = try shrunk.premultiplied ? Self.straight(base, failure: failure) : base
        } else if shrunk.premultiplied || (base.isEightBitRGB && base.hasAlpha) {
            let premultiplied = try shrunk.premultiplied ? base : Self.premultipliedEightBit(base, failure: failure)
            let resized = try VipsImage.make("resize", failure: failure) {
                cvips_resize(premultiplied.pointer, $0, Double(width) / Double(base.width), Double(height) / Double(base.height))
            }
            image = try Self.straight(resized, failure: failure)
        } else if !base.hasAlpha {
            image = try VipsImage.make("resize", failure: failure) {
                cvips_resize(base.pointer, $0, Double(width) / Double(base.width), Double(height) / Double(base.height))
            }
        } else {
            // Alpha in more than 8 bits: libvips' thumbnailer premultiplies in float itself.
            image = try VipsImage.make("thumbnail", failure: failure) { cvips_thumbnail_image(base.pointer, $0, Int32(size), Int32(size)) }
        }
        let encoded = try image.encode(format, png: .thumbnail(of: info), failure: failure)
        return EncodedImage(data: encoded, width: image.width, height: image.height, mimeType: format.mimeType)
    }

    /// `image` (8-bit RGBA) premultiplied by alpha, in 8 bits.
    static func premultipliedEightBit(_ image: VipsImage, failure: @escaping (String) -> Error) throws(Error) -> VipsImage {
        let premultiplied = try VipsImage.make("premultiply", failure: failure) { cvips_premultiply(image.pointer, $0) }
        return try VipsImage.make("cast", failure: failure) { cvips_cast_uchar(premultiplied.pointer, $0) }
    }

    /// Premultiplied 8-bit pixels divided by alpha, in 8 bits.
    static func straight(_ premultiplied: VipsImage, failure: @escaping (String) -> Error) throws(Error) -> VipsImage {
        let straight = try VipsImage.make("unpremultiply", failure: failure) { cvips_unpremultiply(premultiplied.pointer, $0) }
        return try VipsImage.make("cast", failure: failure) { cvips_cast_uchar(straight.pointer, $0) }
    }
}
