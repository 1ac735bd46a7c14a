import CVips

extension Imaging {
    /// Makes a thumbnail that fits inside `size` x `size`, keeping the aspect ratio and never
    /// upscaling, then encodes it.
    ///
    /// Uses libvips' shrink-on-load (JPEG and WebP decode at reduced size). Loading is strict:
    /// a truncated or corrupt input is an error, never a partly grey image. Synchronous CPU
    /// work; safe to call from many tasks at once.
    /// - Parameters:
    ///   - data: the encoded input (PNG, JPEG, WebP or GIF).
    ///   - size: the side of the bounding box in pixels, 1...10000.
    ///   - format: the output encoding.
    /// - Throws: any ``Error`` ``probe(_:)`` throws, ``Error/corrupt(format:detail:)`` when the
    ///   pixels cannot be decoded, ``Error/encodeFailed(format:detail:)``.
    public func thumbnail(_ data: [UInt8], fitting size: Int, format: OutputFormat = .png) throws(Error) -> EncodedImage {
        try thumbnail(data, width: size, height: size, format: format)
    }

    /// Makes a thumbnail that fits inside `width` x `height`; see ``thumbnail(_:fitting:format:)``.
    public func thumbnail(_ data: [UInt8], width: Int, height: Int, format: OutputFormat = .png) throws(Error) -> EncodedImage {
        guard (1...10_000).contains(width), (1...10_000).contains(height) else {
            throw .invalidArgument("thumbnail box \(width)x\(height) must be 1...10000 on each side")
        }
        if case let .webp(quality) = format, !(1...100).contains(quality) {
            throw .invalidArgument("WebP quality \(quality) must be 1...100")
        }
        if case let .jpeg(quality) = format, !(1...100).contains(quality) {
            throw .invalidArgument("JPEG quality \(quality) must be 1...100")
        }
        return try withBytes(data) { (bytes) throws(Error) -> EncodedImage in
            let info = try probe(bytes)
            let corrupt = { (detail: String) in Error.corrupt(format: info.format, detail: detail) }
            let mutableBase = UnsafeMutableRawPointer(mutating: bytes.baseAddress!)
            let image = try VipsImage.make("thumbnail", failure: corrupt) {
                cvips_thumbnail_buffer(mutableBase, bytes.count, $0, Int32(width), Int32(height), "fail_on=truncated")
            }
            // Pixels are decoded lazily while encoding, so a truncated input fails here.
            let encoded = try image.encode(format, failure: corrupt)
            return EncodedImage(data: encoded, width: image.width, height: image.height, mimeType: format.mimeType)
        }
    }
}
