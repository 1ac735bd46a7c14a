import CVips
import Foundation

extension Imaging {
    /// Reads format, size and bands from the header, without decoding pixels.
    ///
    /// Checks ``Limits/maxBytes``, ``Limits/maxPixels``, ``Limits/maxSide``,
    /// ``Limits/maxFrames`` and ``Limits/maxDecodeMemory``. Safe to call concurrently.
    /// - Throws: ``Error/empty``, ``Error/inputTooLarge(bytes:limit:)``,
    ///   ``Error/unknownFormat(byteCount:looksLikeText:)``, ``Error/unsupportedFormat(_:)``,
    ///   ``Error/tooManyPixels(width:height:limit:)``, ``Error/sideTooLong(width:height:limit:)``,
    ///   ``Error/tooManyFrames(frames:limit:)``,
    ///   ``Error/tooMuchMemoryToDecode(format:width:height:bytes:limit:)`` or
    ///   ``Error/corrupt(format:detail:)``.
    public func probe(_ data: [UInt8]) throws(Error) -> ImageInfo {
        try withBytes(data) { (bytes) throws(Error) in try probe(bytes) }
    }

    /// ``probe(_:)`` of bytes read in place (a server's buffer, an image cache's): nothing copied.
    /// - Throws: what ``probe(_:)`` throws.
    public func probe(bytes: UnsafeRawBufferPointer) throws(Error) -> ImageInfo {
        try probe(bytes)
    }

    /// Shared by `probe` and `thumbnail`: every check that needs no pixels.
    func probe(_ bytes: UnsafeRawBufferPointer) throws(Error) -> ImageInfo {
        try Self.start()
        guard bytes.count > 0, let base = bytes.baseAddress else { throw .empty }
        guard bytes.count <= limits.maxBytes else {
            throw .inputTooLarge(bytes: bytes.count, limit: limits.maxBytes)
        }
        guard let loader = vips_foreign_find_load_buffer(base, bytes.count) else {
            _ = VipsRuntime.takeErrorMessage()
            throw .unknownFormat(byteCount: bytes.count, looksLikeText: Self.looksLikeText(bytes))
        }
        let loaderName = String(cString: loader)
        guard let format = ImageFormat(loader: loaderName) else {
            throw .unsupportedFormat(loaderName.replacingOccurrences(of: "VipsForeignLoad", with: ""))
        }
        guard let header = cvips_image_new_from_buffer(base, bytes.count, "") else {
            throw .corrupt(format: format, detail: VipsRuntime.takeErrorMessage())
        }
        let image = VipsImage(header)
        let info = ImageInfo(
            format: format, width: image.width, height: image.height,
            bands: image.bands, hasAlpha: image.hasAlpha,
            frames: max(1, Int(vips_image_get_n_pages(image.pointer))),
            orientation: min(8, max(1, Int(vips_image_get_orientation(image.pointer))))
        )
        // Multiplied in Int64-safe Int on 64-bit; headers can claim up to 2^31 per side.
        guard info.width.multipliedReportingOverflow(by: info.height).partialValue <= limits.maxPixels,
              info.width > 0, info.height > 0
        else {
            throw .tooManyPixels(width: info.width, height: info.height, limit: limits.maxPixels)
        }
        guard info.width <= limits.maxSide, info.height <= limits.maxSide else {
            throw .sideTooLong(width: info.width, height: info.height, limit: limits.maxSide)
        }
        guard info.frames <= limits.maxFrames else {
            throw .tooManyFrames(frames: info.frames, limit: limits.maxFrames)
        }
        let memory = Self.decodeMemory(of: info, bytesPerSample: image.bytesPerSample, interlaced: image.isInterlaced)
        guard memory <= limits.maxDecodeMemory else {
            throw .tooMuchMemoryToDecode(format: format, width: info.width, height: info.height, bytes: memory, limit: limits.maxDecodeMemory)
        }
        return info
    }

    /// The memory decoding an image described by `info` takes at once, estimated from its
    /// header; 0 for an input libvips shrinks while it reads it (a baseline JPEG, a WebP, a PNG
    /// that is not interlaced: a few rows at a time). Measured on libvips 8.18 (peak memory less
    /// the process's own, thumbnailing to 200 px):
    /// - AVIF: 4 x its decoded bytes (width x height x bands x bytes per sample): libheif's
    ///   planes, its interleaved copy and libvips' own (an 8-bit RGBA 4,096 x 4,096: 274 MB for
    ///   64 MiB decoded; 7,071 x 7,071: 812 MB);
    /// - progressive JPEG: 2 bytes for each sample of the whole image, libjpeg's coefficients
    ///   (7,071 x 7,071 CMYK: 400 MB; chroma subsampling makes it less);
    /// - GIF: its whole canvas in RGBA, 4 bytes a pixel;
    /// - interlaced PNG: its decoded bytes (7,000 x 7,000 RGBA: 222 MB for 196 MB).
    /// A product past `Int.max` (no header within the pixel limit makes one) counts as `Int.max`.
    static func decodeMemory(of info: ImageInfo, bytesPerSample: Int, interlaced: Bool) -> Int {
        func product(_ factors: Int...) -> Int {
            factors.reduce(1) { total, factor in
                let (value, overflow) = total.multipliedReportingOverflow(by: max(0, factor))
                return overflow ? .max : value
            }
        }
        return switch info.format {
        case .avif: product(4, info.width, info.height, info.bands, bytesPerSample)
        case .jpeg where interlaced: product(2, info.width, info.height, info.bands)
        case .gif: product(4, info.width, info.height)
        case .png where interlaced: product(info.width, info.height, info.bands, bytesPerSample)
        default: 0
        }
    }

    /// True when the first bytes are printable ASCII, as in an HTML or JSON error body.
    static func looksLikeText(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let head = bytes.prefix(256)
        return !head.isEmpty && head.allSatisfy { $0 == 9 || $0 == 10 || $0 == 13 || (32..<127).contains($0) }
    }
}
