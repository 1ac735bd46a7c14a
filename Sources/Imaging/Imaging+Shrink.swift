import CVips
import Synchronization

/// An image decoded once, and shrunk once where that saves work, kept in memory to make several
/// thumbnails of it: each format at its box, and smaller boxes (the 1x of a 2x), without
/// decoding the original again. Made by ``Imaging/shrink(_:fitting:)``; used by
/// ``Imaging/thumbnail(of:fitting:format:)``.
///
/// A PNG or GIF (no shrink-on-load) is kept whole: every thumbnail of it is the one
/// ``Imaging/thumbnail(_:fitting:format:)`` makes of the original, pixel for pixel. Any other
/// format (JPEG, WebP, AVIF) is shrunk on load and then to the box, and a smaller box is resized
/// from those pixels. Each box's pixels are kept too, once made: each box is resized once for
/// all its formats.
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
    /// What `pixels` are.
    let form: Form

    /// What a shrunk image's pixels are.
    enum Form {
        /// The whole original (PNG, GIF: no shrink-on-load, so nothing is saved by shrinking
        /// first): each box is the thumbnail of the original itself.
        case whole
        /// Shrunk to the box as ``Imaging/thumbnail(_:fitting:format:)`` shrinks it (JPEG, WebP,
        /// AVIF: shrunk on load, then resized; a PNG or GIF too large to keep whole: decoded once,
        /// streaming), alpha or not, in the loader's sample format.
        case shrunk
    }

    /// The thumbnail's pixels at each box asked for so far, in memory: each box is resized once
    /// for all its formats.
    private let boxes = Mutex<[Int: InMemory]>([:])

    /// A libvips image decoded into memory: never changed after it is made, read by any number of
    /// threads at once (libvips' own rule), so it may cross between them.
    private struct InMemory: @unchecked Sendable {
        let image: VipsImage
    }

    /// The pixels at `size`: kept, or made by `make`, decoded into memory and kept. Two threads
    /// asking at once both make them (the same pixels); the first kept stays.
    func pixels(fitting size: Int, _ make: () throws(Imaging.Error) -> VipsImage) throws(Imaging.Error) -> VipsImage {
        if let kept = boxes.withLock({ $0[size] }) { return kept.image }
        let lazy = try make()
        let made = InMemory(image: try VipsImage.make("decode", failure: { Imaging.Error.encodeFailed(format: "thumbnail", detail: $0) }) {
            cvips_copy_memory(lazy.pointer, $0)
        })
        return boxes.withLock { boxes in
            if let kept = boxes[size] { return kept }
            boxes[size] = made
            return made
        }.image
    }

    init(original: ImageInfo, box: Int, pixels: VipsImage, form: Form) {
        self.original = original
        self.box = box
        self.pixels = pixels
        self.form = form
    }

    /// Width of the shrunk pixels.
    public var width: Int { pixels.width }
    /// Height of the shrunk pixels.
    public var height: Int { pixels.height }
    /// The memory the pixels take, in bytes, with the thumbnails' pixels kept so far (an image
    /// kept twice, the shrunk pixels at their own box, counted once).
    public var byteCount: Int {
        var seen = Set<UnsafeMutablePointer<CVips.VipsImage>>()
        return ([pixels] + boxes.withLock { $0.values.map(\.image) }).reduce(0) { total, image in
            seen.insert(image.pointer).inserted ? total + image.width * image.height * image.bands * image.bytesPerSample : total
        }
    }
}

extension Imaging {
    /// Decodes `data` once, and for a JPEG or WebP shrinks it to fit inside `size` x `size`
    /// (on load, then to the box), keeping the pixels in memory, so that
    /// ``thumbnail(of:fitting:format:)`` makes each thumbnail of that box or a smaller one
    /// (every format, the 1x of a 2x) at the cost of its resize and encode alone. A PNG or GIF is
    /// kept whole (it has no shrink-on-load, so shrinking first would save nothing and a second
    /// resize would ring): its pixels take `width x height x bands x bytes a sample`
    /// (``shrinkCost(of:fitting:)`` says how much before). One too large to keep whole (see
    /// ``shrink(_:fitting:keepingAtMost:)-([UInt8],_,_)``) is decoded once, streaming, and kept shrunk to the box.
    ///
    /// At `size`, either way, a thumbnail is the image ``thumbnail(_:fitting:format:)`` makes.
    /// Loading is strict: a truncated or corrupt input fails here. Synchronous CPU work; safe to
    /// call from many tasks at once.
    /// - Throws: what ``thumbnail(_:fitting:format:)`` throws for the input and the box.
    public func shrink(_ data: [UInt8], fitting size: Int) throws(Error) -> ShrunkImage {
        // Nothing costs more than Int.max: never nil.
        try shrink(data, fitting: size, keepingAtMost: .max)!
    }

    /// ``shrink(_:fitting:)`` within `byteLimit` bytes: a PNG or GIF whose whole pixels would take
    /// more (``shrinkCost(of:fitting:)``) is decoded once, streaming, and kept shrunk to the box as
    /// a JPEG is, so its variants cost one decode however many are made (at the box, the image
    /// ``thumbnail(_:fitting:format:)`` makes; a smaller box is resized from it, within a fraction
    /// of a level). `nil` (nothing decoded) only when even the box's pixels would take more.
    /// - Throws: what ``shrink(_:fitting:)`` throws.
    public func shrink(_ data: [UInt8], fitting size: Int, keepingAtMost byteLimit: Int) throws(Error) -> ShrunkImage? {
        try withBytes(data) { (bytes) throws(Error) -> ShrunkImage? in try shrink(bytes, fitting: size, keepingAtMost: byteLimit) }
    }

    /// ``shrink(_:fitting:keepingAtMost:)-([UInt8],_,_)`` of `bytes` read in place: nothing of the input is
    /// copied (the pixels kept are libvips' own).
    public func shrink(_ bytes: UnsafeRawBufferPointer, fitting size: Int, keepingAtMost byteLimit: Int) throws(Error) -> ShrunkImage? {
        try Self.check(width: size, height: size, format: .png)
        let info = try probe(bytes)
        let corrupt = { (detail: String) in Error.corrupt(format: info.format, detail: detail) }
        let whole = (info.format == .png || info.format == .gif) && Self.shrinkCost(of: info, fitting: size) <= byteLimit
        if whole {
            // No shrink-on-load: kept whole, every box is made from the original's own pixels.
            guard let loaded = cvips_image_new_from_buffer(bytes.baseAddress!, bytes.count, "fail_on=truncated") else {
                throw corrupt(VipsRuntime.takeErrorMessage())
            }
            let lazy = VipsImage(loaded)
            let pixels = try VipsImage.make("decode", failure: corrupt) { cvips_copy_memory(lazy.pointer, $0) }
            return ShrunkImage(original: info, box: size, pixels: pixels, form: .whole)
        }
        let (width, height) = Self.fittedSize(width: info.width, height: info.height, boxWidth: size, boxHeight: size)
        if width * height * max(1, info.bands) * 2 > byteLimit { return nil }
        let mutableBase = UnsafeMutableRawPointer(mutating: bytes.baseAddress!)
        let lazy = try VipsImage.make("thumbnail", failure: corrupt) {
            cvips_thumbnail_buffer(mutableBase, bytes.count, $0, Int32(size), Int32(size), "fail_on=truncated")
        }
        // Every pixel decoded now (a truncated input fails here), into memory the image owns.
        let pixels = try VipsImage.make("decode", failure: corrupt) { cvips_copy_memory(lazy.pointer, $0) }
        return ShrunkImage(original: info, box: size, pixels: pixels, form: .shrunk)
    }

    /// Whether ``shrink(_:fitting:)`` keeps `data` whole, read from its first bytes (the PNG and
    /// GIF signatures): every thumbnail of such an image is the same made from the kept pixels or
    /// streamed from the original with ``thumbnail(_:fitting:format:)``, so a caller in a hurry
    /// may stream it while nothing is kept.
    public static func keepsWhole(_ data: some Collection<UInt8>) -> Bool {
        data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) || data.starts(with: "GIF8".utf8)
    }

    /// At most how many bytes ``shrink(_:fitting:)`` keeps of an image `info` describes at box
    /// `size`, from its header alone (at 2 bytes a sample; the thumbnails' pixels not counted):
    /// a PNG or GIF whole, anything else its thumbnail at `size`. A caller that keeps shrunk
    /// images within a budget asks first: a PNG of 50 megapixels that compresses to almost
    /// nothing would take 400 MB, where a thumbnail of it streams through a few rows at a time.
    public static func shrinkCost(of info: ImageInfo, fitting size: Int) -> Int {
        let (width, height) = info.format == .png || info.format == .gif
            ? (info.width, info.height) : fittedSize(width: info.width, height: info.height, boxWidth: size, boxHeight: size)
        return width * height * max(1, info.bands) * 2
    }

    /// Makes a thumbnail of `shrunk`'s original that fits inside `size` x `size` (at most the box
    /// it was shrunk to), then encodes it, without decoding the original again.
    ///
    /// Of a PNG or GIF (kept whole), at every box, the image ``thumbnail(_:fitting:format:)``
    /// makes. Of a JPEG, WebP or AVIF, the same at the shrunk box; a smaller box is resized (Lanczos-3, premultiplied in 8 bits with alpha)
    /// from the shrunk pixels to ``fittedSize(width:height:boxWidth:boxHeight:)`` of the original,
    /// within a fraction of a level of a thumbnail made from the original. (Resizing a PNG's 1x
    /// from its 2x pixels too was tried on the gallery's art: 0.2 to 0.3 levels away, but two
    /// Lanczos steps ring more than one, and its 1x PNGs came out 27 % larger.) The PNG settings
    /// are the ones ``thumbnail(_:fitting:format:)`` picks for the original. Safe to call from
    /// many tasks at once on the same `shrunk`.
    /// - Throws: ``Error/invalidArgument(_:)`` for a box larger than `shrunk`'s or an encoder
    ///   setting out of range, ``Error/encodeFailed(format:detail:)``.
    public func thumbnail(of shrunk: ShrunkImage, fitting size: Int, format: OutputFormat = .png) throws(Error) -> EncodedImage {
        try thumbnail(of: shrunk, fitting: size, format: format, EncodedImage.init(copying:))
    }

    /// ``thumbnail(of:fitting:format:)``, handing `body` the encoded output in libvips' own
    /// buffer (``EncodedBytes``), freed when `body` returns: a caller that keeps it copies it once.
    public func thumbnail<Result>(
        of shrunk: ShrunkImage, fitting size: Int, format: OutputFormat = .png, _ body: (EncodedBytes) -> Result
    ) throws(Error) -> Result {
        try Self.check(width: size, height: size, format: format)
        guard size <= shrunk.box else {
            throw .invalidArgument("a thumbnail of \(size) px cannot be made from pixels shrunk to \(shrunk.box) px: shrink to the largest box first")
        }
        let info = shrunk.original
        let failure = { (detail: String) in Error.encodeFailed(format: format.description, detail: detail) }
        let image = try shrunk.pixels(fitting: size) { () throws(Error) -> VipsImage in try Self.resized(shrunk, fitting: size, failure: failure) }
        return try image.encode(format, png: .thumbnail(of: info), failure: failure) {
            body(EncodedBytes(bytes: $0, width: image.width, height: image.height, mimeType: format.mimeType))
        }
    }

    /// `shrunk`'s pixels at `size` (see ``thumbnail(of:fitting:format:)``), lazily computed.
    static func resized(_ shrunk: ShrunkImage, fitting size: Int, failure: @escaping (String) -> Error) throws(Error) -> VipsImage {
        let info = shrunk.original
        let base = shrunk.pixels
        var (width, height) = Self.fittedSize(width: info.width, height: info.height, boxWidth: size, boxHeight: size)
        if (base.width > base.height) != (width > height), base.width != base.height {
            swap(&width, &height)  // turned by its EXIF orientation on load
        }
        func thumbnailer() throws(Error) -> VipsImage {
            try VipsImage.make("thumbnail", failure: failure) { cvips_thumbnail_image(base.pointer, $0, Int32(size), Int32(size)) }
        }
        switch shrunk.form {
        case .whole:
            // The original's own pixels: the path ``thumbnail(_:fitting:format:)`` takes.
            let scale = min(Double(size) / Double(base.width), Double(size) / Double(base.height))
            guard base.isEightBitRGB, base.hasAlpha, scale < 1 else { return try thumbnailer() }
            return try straight(premultipliedResize(base, width: width, height: height, failure: failure), failure: failure)
        case .shrunk:
            if size == shrunk.box || (width >= base.width && height >= base.height) { return base }
            if base.isEightBitRGB, base.hasAlpha {
                // Premultiplied in 8 bits, as a thumbnail of an RGBA PNG is (no colour bleeds).
                return try straight(premultipliedResize(base, width: width, height: height, failure: failure), failure: failure)
            }
            // Alpha in more than 8 bits: libvips' thumbnailer premultiplies in float itself.
            if base.hasAlpha { return try thumbnailer() }
            return try VipsImage.make("resize", failure: failure) {
                cvips_resize(base.pointer, $0, Double(width) / Double(base.width), Double(height) / Double(base.height))
            }
        }
    }

    /// `image` (8-bit RGBA) premultiplied by alpha in 8 bits, then resized (Lanczos-3) to
    /// `width` x `height`: still premultiplied.
    static func premultipliedResize(
        _ image: VipsImage, width: Int, height: Int, failure: @escaping (String) -> Error
    ) throws(Error) -> VipsImage {
        let premultiplied = try premultipliedEightBit(image, failure: failure)
        return try VipsImage.make("resize", failure: failure) {
            cvips_resize(premultiplied.pointer, $0, Double(width) / Double(image.width), Double(height) / Double(image.height))
        }
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
