import CVips
import Foundation

extension Imaging {
    /// Reads format, size and bands from the header, without decoding pixels.
    ///
    /// Checks ``Limits/maxBytes``, ``Limits/maxPixels``, ``Limits/maxSide`` and, for an image
    /// libvips must decode whole (AVIF, interlaced PNG, progressive JPEG),
    /// ``Limits/maxWholeDecodeBytes``. Safe to call concurrently.
    /// - Throws: ``Error/empty``, ``Error/inputTooLarge(bytes:limit:)``,
    ///   ``Error/unknownFormat(byteCount:looksLikeText:)``, ``Error/unsupportedFormat(_:)``,
    ///   ``Error/tooManyPixels(width:height:limit:)``, ``Error/sideTooLong(width:height:limit:)``,
    ///   ``Error/tooLargeToDecodeWhole(format:width:height:bytes:limit:)`` or
    ///   ``Error/corrupt(format:detail:)``.
    public func probe(_ data: [UInt8]) throws(Error) -> ImageInfo {
        try withBytes(data) { (bytes) throws(Error) in try probe(bytes) }
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
            bands: image.bands, hasAlpha: image.hasAlpha
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
        // Within the sides' limits, so no product below overflows.
        if format == .avif || image.isInterlaced {
            let decoded = info.width * info.height * info.bands * image.bytesPerSample
            guard decoded <= limits.maxWholeDecodeBytes else {
                throw .tooLargeToDecodeWhole(format: format, width: info.width, height: info.height, bytes: decoded, limit: limits.maxWholeDecodeBytes)
            }
        }
        return info
    }

    /// True when the first bytes are printable ASCII, as in an HTML or JSON error body.
    static func looksLikeText(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let head = bytes.prefix(256)
        return !head.isEmpty && head.allSatisfy { $0 == 9 || $0 == 10 || $0 == 13 || (32..<127).contains($0) }
    }
}
