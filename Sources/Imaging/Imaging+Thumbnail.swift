import CVips

extension Imaging {
    /// Makes a thumbnail that fits inside `size` x `size`, keeping the aspect ratio and never
    /// upscaling, then encodes it.
    ///
    /// JPEG and WebP use libvips' shrink-on-load (they decode at reduced size). An 8-bit RGBA
    /// image of another format (PNG, GIF) is premultiplied by alpha and brought back to 8 bits
    /// before it is resized, so libvips' resize box-shrinks 8-bit pixels instead of floats, and
    /// colour never bleeds from transparent pixels into semi-transparent edges; it is
    /// unpremultiplied at thumbnail size. (libvips' own thumbnail premultiplies in float and
    /// shrinks the floats: a quarter slower on a 1024 px RGBA PNG, the same quality within
    /// rounding.) A PNG thumbnail of a photograph (JPEG, WebP) or of an image with alpha is
    /// deflated with PNG's left-difference filter at zlib level 3, one of a drawn image without
    /// alpha with no filter at level 6: each the smaller and the faster for its kind, measured on
    /// libvips 8.18. Loading is strict: a truncated or corrupt input is an
    /// error, never a partly grey image. Synchronous CPU work; safe to call from many tasks at
    /// once.
    /// - Parameters:
    ///   - data: the encoded input (PNG, JPEG, WebP, GIF or AVIF).
    ///   - size: the side of the bounding box in pixels, 1...10000.
    ///   - format: the output encoding.
    /// - Throws: any ``Error`` ``probe(_:)`` throws, ``Error/corrupt(format:detail:)`` when the
    ///   pixels cannot be decoded, ``Error/encodeFailed(format:detail:)``.
    public func thumbnail(_ data: [UInt8], fitting size: Int, format: OutputFormat = .png) throws(Error) -> EncodedImage {
        try thumbnail(data, width: size, height: size, format: format)
    }

    /// Makes a thumbnail that fits inside `width` x `height`; see ``thumbnail(_:fitting:format:)``.
    public func thumbnail(_ data: [UInt8], width: Int, height: Int, format: OutputFormat = .png) throws(Error) -> EncodedImage {
        try withBytes(data) { (bytes) throws(Error) -> EncodedImage in
            try thumbnail(bytes, width: width, height: height, format: format, EncodedImage.init(copying:))
        }
    }

    /// ``thumbnail(_:fitting:format:)`` of `bytes` read in place (no copy of the input), handing
    /// `body` the encoded output in libvips' own buffer (``EncodedBytes``), freed when `body`
    /// returns: a caller that keeps it copies it once.
    public func thumbnail<Result>(
        _ bytes: UnsafeRawBufferPointer, fitting size: Int, format: OutputFormat = .png, _ body: (EncodedBytes) -> Result
    ) throws(Error) -> Result {
        try thumbnail(bytes, width: size, height: size, format: format, body)
    }

    func thumbnail<Result>(
        _ bytes: UnsafeRawBufferPointer, width: Int, height: Int, format: OutputFormat, _ body: (EncodedBytes) -> Result
    ) throws(Error) -> Result {
        try Self.check(width: width, height: height, format: format)
        let info = try probe(bytes)
        let corrupt = { (detail: String) in Error.corrupt(format: info.format, detail: detail) }
        let image: VipsImage
        if let premultiplied = try premultipliedThumbnail(bytes, info: info, width: width, height: height, failure: corrupt) {
            image = try Self.straight(premultiplied, failure: corrupt)
        } else {
            let mutableBase = UnsafeMutableRawPointer(mutating: bytes.baseAddress!)
            image = try VipsImage.make("thumbnail", failure: corrupt) {
                cvips_thumbnail_buffer(mutableBase, bytes.count, $0, Int32(width), Int32(height), "fail_on=truncated")
            }
        }
        // Pixels are decoded lazily while encoding, so a truncated input fails here.
        return try image.encode(format, png: .thumbnail(of: info), failure: corrupt) {
            body(EncodedBytes(bytes: $0, width: image.width, height: image.height, mimeType: format.mimeType))
        }
    }

    /// Refuses a box or encoder setting out of range.
    static func check(width: Int, height: Int, format: OutputFormat) throws(Error) {
        guard (1...10_000).contains(width), (1...10_000).contains(height) else {
            throw .invalidArgument("thumbnail box \(width)x\(height) must be 1...10000 on each side")
        }
        if case let .webp(quality, _) = format, !(1...100).contains(quality) {
            throw .invalidArgument("WebP quality \(quality) must be 1...100")
        }
        if case let .jpeg(quality) = format, !(1...100).contains(quality) {
            throw .invalidArgument("JPEG quality \(quality) must be 1...100")
        }
        if case let .avif(quality, effort) = format, !(1...100).contains(quality) || !(0...9).contains(effort) {
            throw .invalidArgument("AVIF quality \(quality) must be 1...100 and effort \(effort) 0...9")
        }
    }

    /// The premultiply-in-8-bit path (see ``thumbnail(_:fitting:format:)``) up to the resize:
    /// the thumbnail's pixels still premultiplied, in 8 bits; `nil` when the input is not for it:
    /// JPEG and WebP (shrink-on-load is faster), no alpha or other pixel formats, or no
    /// downscaling.
    func premultipliedThumbnail(
        _ bytes: UnsafeRawBufferPointer, info: ImageInfo, width: Int, height: Int, failure: @escaping (String) -> Error
    ) throws(Error) -> VipsImage? {
        guard info.format == .png || info.format == .gif, info.hasAlpha else { return nil }
        let scale = min(Double(width) / Double(info.width), Double(height) / Double(info.height))
        guard scale < 1 else { return nil }
        guard let loaded = cvips_image_new_from_buffer(bytes.baseAddress!, bytes.count, "fail_on=truncated") else {
            throw failure(VipsRuntime.takeErrorMessage())
        }
        let input = VipsImage(loaded)
        guard input.isEightBitRGB, input.hasAlpha else { return nil }
        let (targetWidth, targetHeight) = Self.fittedSize(width: info.width, height: info.height, boxWidth: width, boxHeight: height)
        return try Self.premultipliedResize(input, width: targetWidth, height: targetHeight, failure: failure)
    }
}

extension Imaging {
    /// The size of the thumbnail of a `width` x `height` image that fits inside `boxWidth` x
    /// `boxHeight`: scaled by the smaller of the two ratios, each side rounded to the nearest
    /// pixel (at least 1); an image that fits keeps its size (a thumbnail is never larger than
    /// its image). A page states an image's size with it before the image arrives, so nothing
    /// moves when it does. Exact for PNG and GIF with alpha, which ``thumbnail(_:width:height:format:)``
    /// resizes to this very size; other inputs go through libvips' own thumbnailer, whose
    /// shrink-on-load (JPEG, WebP) and EXIF rotation may give a side one pixel longer or shorter,
    /// or the two sides swapped.
    public static func fittedSize(width: Int, height: Int, boxWidth: Int, boxHeight: Int) -> (width: Int, height: Int) {
        guard width > 0, height > 0 else { return (max(0, width), max(0, height)) }
        let scale = min(1, Double(boxWidth) / Double(width), Double(boxHeight) / Double(height))
        return (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
    }

    /// Whether this process's libvips can write `format`: a 2 x 2 RGBA image is encoded and
    /// read back. AVIF needs libheif with an AV1 encoder, which a system libvips may lack; an
    /// app asks once at start-up and offers only what works.
    public func canEncode(_ format: OutputFormat) -> Bool {
        guard let encoded = try? thumbnail(Self.tinyPNG, fitting: 2, format: format) else { return false }
        return (try? probe(encoded.data))?.format.mimeType == format.mimeType
    }

    /// A 2 x 2 RGBA PNG: red above, translucent blue below.
    static let tinyPNG: [UInt8] = [
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x02,
        0x00, 0x00, 0x00, 0x02, 0x08, 0x06, 0x00, 0x00, 0x00, 0x72, 0xB6, 0x0D, 0x24, 0x00, 0x00, 0x00, 0x13, 0x49, 0x44, 0x41,
        0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0, 0x1F, 0x84, 0x19, 0x80, 0xB8, 0x01, 0x84, 0x01, 0x40, 0xD4, 0x06, 0xFB,
        0xCD, 0x70, 0xDF, 0x71, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ]
}
