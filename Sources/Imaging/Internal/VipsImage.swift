import CVips

/// Owns one reference to a `VipsImage` and releases it on deinit. Never leaves the call that
/// made it, so it needs no thread-safety of its own.
final class VipsImage {
    let pointer: UnsafeMutablePointer<CVips.VipsImage>

    init(_ pointer: UnsafeMutablePointer<CVips.VipsImage>) {
        self.pointer = pointer
    }

    /// Wraps the output of a libvips call that returns 0 on success and fills `out`.
    /// `failure` turns libvips' message into the error the caller means (default: the stage failed).
    static func make(
        _ stage: String,
        failure: ((String) -> Imaging.Error)? = nil,
        _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CVips.VipsImage>?>) -> Int32
    ) throws(Imaging.Error) -> VipsImage {
        var out: UnsafeMutablePointer<CVips.VipsImage>?
        guard body(&out) == 0, let out else {
            let detail = VipsRuntime.takeErrorMessage()
            throw failure?(detail) ?? .encodeFailed(format: stage, detail: detail)
        }
        return VipsImage(out)
    }

    deinit { cvips_unref(pointer) }

    var width: Int { Int(vips_image_get_width(pointer)) }
    var height: Int { Int(vips_image_get_height(pointer)) }
    var bands: Int { Int(vips_image_get_bands(pointer)) }
    var hasAlpha: Bool { vips_image_hasalpha(pointer) != 0 }
    /// Bytes of one sample: 1 for 8-bit, 2 for 16-bit (a 10- or 12-bit AVIF, a 16-bit PNG).
    /// At most 16 (a double complex); a format libvips does not know (its size is all ones) counts as 16.
    var bytesPerSample: Int { Int(min(vips_format_sizeof(vips_image_get_format(pointer)), 16)) }
    /// Whether the loader says the image is interlaced (an Adam7 PNG, a progressive JPEG).
    var isInterlaced: Bool {
        var value: Int32 = 0
        return vips_image_get_typeof(pointer, "interlaced") != 0 && vips_image_get_int(pointer, "interlaced", &value) == 0 && value != 0
    }
    /// Whether the pixels are 8-bit sRGB, with or without alpha.
    var isEightBitRGB: Bool {
        vips_image_get_format(pointer) == VIPS_FORMAT_UCHAR && (bands == 3 || bands == 4)
            && vips_image_get_interpretation(pointer) == VIPS_INTERPRETATION_sRGB
    }

    /// Encodes to `format` (PNG with `png`'s settings); the returned bytes are copied out of
    /// libvips' buffer.
    func encode(
        _ format: OutputFormat, png: PNGEncoding = .unfiltered, failure: ((String) -> Imaging.Error)? = nil
    ) throws(Imaging.Error) -> [UInt8] {
        try encode(format, png: png, failure: failure) { [UInt8]($0) }
    }

    /// Encodes to `format` and hands `body` the bytes in libvips' own buffer, freed when `body`
    /// returns: a caller that keeps them copies them once, into storage of its own.
    func encode<Result>(
        _ format: OutputFormat, png: PNGEncoding = .unfiltered, failure: ((String) -> Imaging.Error)? = nil,
        _ body: (UnsafeRawBufferPointer) -> Result
    ) throws(Imaging.Error) -> Result {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let status: Int32
        switch format {
        case .png: status = cvips_pngsave_buffer(pointer, &buffer, &length, png.compression, Int32(png.filter.rawValue))
        case let .webp(quality, sharpYUV): status = cvips_webpsave_buffer(pointer, &buffer, &length, Int32(quality), sharpYUV ? 1 : 0)
        case let .jpeg(quality): status = cvips_jpegsave_buffer(pointer, &buffer, &length, Int32(quality))
        case let .avif(quality, effort): status = cvips_avifsave_buffer(pointer, &buffer, &length, Int32(quality), Int32(effort))
        }
        guard status == 0, let buffer else {
            let detail = VipsRuntime.takeErrorMessage()
            throw failure?(detail) ?? .encodeFailed(format: format.description, detail: detail)
        }
        defer { cvips_free(buffer) }
        return body(UnsafeRawBufferPointer(start: buffer, count: length))
    }
}

/// How a PNG is deflated: the row filter and the zlib level. Chosen by measurement on libvips
/// 8.18 (whose zlib-ng makes levels 6 to 8 one and the same; docs/benchmarks.md, "libvips 8.18"):
struct PNGEncoding {
    var compression: Int32
    var filter: VipsForeignPngFilter

    /// No filter, level 6 (libvips' default): smallest and fastest for drawn art without alpha,
    /// such as the gallery's gradients.
    static let unfiltered = PNGEncoding(compression: 6, filter: VIPS_FOREIGN_PNG_FILTER_NONE)
    /// The left-difference filter, level 3: for photographs and images with alpha, 20 to 40 %
    /// smaller than `unfiltered` and at least as fast to encode.
    static let subFiltered = PNGEncoding(compression: 3, filter: VIPS_FOREIGN_PNG_FILTER_SUB)

    /// The settings for a thumbnail of an input described by `info`: photographs (JPEG, WebP)
    /// and images with alpha get the filter; drawn images without alpha do not.
    static func thumbnail(of info: ImageInfo) -> PNGEncoding {
        info.format == .jpeg || info.format == .webp || info.hasAlpha ? .subFiltered : .unfiltered
    }
}

/// `Array.withUnsafeBytes` is `rethrows`, which loses a typed error; this keeps it.
func withBytes<R>(
    _ data: [UInt8], _ body: (UnsafeRawBufferPointer) throws(Imaging.Error) -> R
) throws(Imaging.Error) -> R {
    let result = data.withUnsafeBytes { bytes in
        Result { () throws(Imaging.Error) -> R in try body(bytes) }
    }
    return try result.get()
}
