import CVips

extension Imaging {
    /// One step of ``process(_:operations:encoding:stop:)``, done by one libvips operation on the
    /// image the steps before it made. Sizes and positions are in pixels of that image.
    public enum Operation: Sendable, Hashable {
        /// Turns the image upright by its EXIF orientation, flips included (`vips_autorot`).
        case autoRotate
        /// Rotates clockwise by 90, 180 or 270 degrees (`vips_rot`).
        case rotate(degrees: Int)
        /// Keeps the area at (`x`, `y`) of `width` x `height`, which must lie inside the image
        /// (`vips_extract_area`).
        case crop(x: Int, y: Int, width: Int, height: Int)
        /// Keeps the `width` x `height` area libvips finds most interesting (`vips_smartcrop`
        /// with the attention strategy); a side larger than the image's is the image's.
        case smartCrop(width: Int, height: Int)
        /// Resizes to exactly `width` x `height` (`vips_thumbnail`, premultiplied when there is
        /// alpha). When it comes first, or right after ``autoRotate``, it is done on load
        /// (`vips_thumbnail_buffer`): a JPEG or WebP decodes at a reduced size.
        case resize(width: Int, height: Int)
        /// Places the image at (`x`, `y`) on a `width` x `height` canvas of transparent pixels,
        /// adding alpha when the image has none (`vips_embed`).
        case extend(x: Int, y: Int, width: Int, height: Int)
        /// Blends the image over a solid colour and drops its alpha (`vips_flatten`); an image
        /// without alpha is left as it is.
        case flatten(red: UInt8, green: UInt8, blue: UInt8)
        /// Gaussian blur of a sigma in pixels (`vips_gaussblur`).
        case blur(sigma: Double)
        /// Unsharp masking of a sigma in pixels (`vips_sharpen`).
        case sharpen(sigma: Double)
    }

    /// How ``process(_:operations:encoding:stop:)`` writes its result.
    public struct Encoding: Sendable, Hashable, CustomStringConvertible {
        /// The formats the result may be written in.
        public enum Format: String, Sendable, Hashable, CaseIterable {
            /// JPEG: no alpha (flatten first, or libvips drops it).
            case jpeg
            /// PNG, lossless; the quality is not used.
            case png
            /// Lossy WebP.
            case webp
            /// AVIF (AV1 in HEIF), 8 bits, at libvips' effort 1 (imgproxy's default speed 8).
            case avif
            /// GIF, one frame; the quality is not used.
            case gif

            /// The MIME type, such as `image/jpeg`.
            public var mimeType: String { "image/\(rawValue)" }
        }

        /// The format.
        public var format: Format
        /// The encoder's quality, 1...100 (JPEG, WebP, AVIF).
        public var quality: Int
        /// Whether EXIF, XMP, IPTC and the ICC profile are written too; stripped when false.
        public var keepsMetadata: Bool

        /// An encoding of `format` at `quality`, metadata stripped unless `keepsMetadata`.
        public init(_ format: Format, quality: Int = 80, keepsMetadata: Bool = false) {
            self.format = format
            self.quality = quality
            self.keepsMetadata = keepsMetadata
        }

        /// A short stable name, usable in cache keys: `jpeg-q80`, `png-q80-keep`.
        public var description: String {
            "\(format.rawValue)-q\(quality)" + (keepsMetadata ? "-keep" : "")
        }
    }

    /// Applies `operations` in order to the image in `data`, then encodes the result; with a
    /// `stop`, gives up when its time limit passes or it is cancelled (``Error/timedOut(limit:)``,
    /// ``Error/cancelled``).
    ///
    /// The header is checked against ``limits`` (``probe(_:)``: bytes, megapixels, sides, frames,
    /// decode memory) before any pixel is decoded. Loading is strict: a truncated or corrupt
    /// input is an error, never a partly grey image. An animation's first frame is used.
    /// Synchronous CPU work; safe to call from many tasks at once.
    /// - Throws: any ``Error`` ``probe(_:)`` throws; ``Error/invalidArgument(_:)`` for a step or
    ///   an encoding out of range (a crop outside the image, a size over ``Limits/maxSide``);
    ///   ``Error/corrupt(format:detail:)`` when the pixels cannot be decoded;
    ///   ``Error/encodeFailed(format:detail:)``.
    public func process(_ data: [UInt8], operations: [Operation], encoding: Encoding, stop: Stop? = nil) throws(Error) -> EncodedImage {
        try withBytes(data) { (bytes) throws(Error) -> EncodedImage in
            try process(bytes, operations: operations, encoding: encoding, stop: stop, EncodedImage.init(copying:))
        }
    }

    /// ``process(_:operations:encoding:stop:)`` of `bytes` read in place (no copy of the input),
    /// handing `body` the encoded output in libvips' own buffer, freed when `body` returns.
    public func process<Result>(
        _ bytes: UnsafeRawBufferPointer, operations: [Operation], encoding: Encoding, stop: Stop? = nil, _ body: (EncodedBytes) -> Result
    ) throws(Error) -> Result {
        let info = try probe(bytes)
        try check(operations, encoding)
        // What libvips failed with: the stop's error when the stop ended the work.
        let corrupt = { (detail: String) in stop?.error ?? Error.corrupt(format: info.format, detail: detail) }
        var steps = operations[...]
        var image: VipsImage
        var inMemory = false
        let rotatesOnLoad = steps.first == .autoRotate
        if case let .resize(width, height)? = steps.dropFirst(rotatesOnLoad ? 1 : 0).first {
            let mutableBase = UnsafeMutableRawPointer(mutating: bytes.baseAddress!)
            image = try VipsImage.make("thumbnail", failure: corrupt) {
                cvips_thumbnail_buffer_exact(
                    mutableBase, bytes.count, $0, Int32(width), Int32(height), rotatesOnLoad ? 0 : 1, "fail_on=truncated")
            }
            steps = steps.dropFirst(rotatesOnLoad ? 2 : 1)
        } else {
            guard let loaded = cvips_image_new_from_buffer(bytes.baseAddress!, bytes.count, "fail_on=truncated") else {
                throw corrupt(VipsRuntime.takeErrorMessage())
            }
            image = VipsImage(loaded)
        }
        // The input is read sequentially; before the first step that reads out of order (a
        // rotation, the attention search), the pixels so far are decoded into memory, once:
        // every step after reads from there.
        func randomAccess() throws(Error) {
            guard !inMemory else { return }
            let source = image
            stop?.watch(source)
            image = try VipsImage.make("decode", failure: corrupt) { cvips_copy_memory(source.pointer, $0) }
            inMemory = true
        }
        for step in steps {
            let source = image
            switch step {
            case .autoRotate:
                guard info.orientation != 1 else { continue }
                try randomAccess()
                let upright = image
                image = try VipsImage.make("autorot", failure: corrupt) { cvips_autorot(upright.pointer, $0) }
            case let .rotate(degrees):
                guard degrees % 360 != 0 else { continue }
                try randomAccess()
                let unturned = image
                let angle = degrees == 90 ? VIPS_ANGLE_D90 : degrees == 180 ? VIPS_ANGLE_D180 : VIPS_ANGLE_D270
                image = try VipsImage.make("rot", failure: corrupt) { cvips_rot(unturned.pointer, $0, angle) }
            case let .crop(x, y, width, height):
                guard x >= 0, y >= 0, x + width <= source.width, y + height <= source.height else {
                    throw .invalidArgument("crop of \(width)x\(height) at (\(x), \(y)) is outside the \(source.width)x\(source.height) image")
                }
                image = try VipsImage.make("extract_area", failure: corrupt) {
                    cvips_extract_area(source.pointer, $0, Int32(x), Int32(y), Int32(width), Int32(height))
                }
            case let .smartCrop(width, height):
                try randomAccess()
                let whole = image
                image = try VipsImage.make("smartcrop", failure: corrupt) {
                    cvips_smartcrop_attention(whole.pointer, $0, Int32(min(width, whole.width)), Int32(min(height, whole.height)))
                }
            case let .resize(width, height):
                image = try VipsImage.make("thumbnail", failure: corrupt) {
                    cvips_thumbnail_image_exact(source.pointer, $0, Int32(width), Int32(height))
                }
            case let .extend(x, y, width, height):
                image = try VipsImage.make("embed", failure: corrupt) {
                    cvips_embed_transparent(source.pointer, $0, Int32(x), Int32(y), Int32(width), Int32(height))
                }
            case let .flatten(red, green, blue):
                guard source.hasAlpha else { continue }
                // In sRGB, so the colour has one value for each band but alpha (a grey image has one).
                let colour = try VipsImage.make("colourspace", failure: corrupt) { cvips_srgb(source.pointer, $0) }
                let background = [Double(red), Double(green), Double(blue)]
                image = try VipsImage.make("flatten", failure: corrupt) { cvips_flatten(colour.pointer, $0, background) }
            case let .blur(sigma):
                image = try VipsImage.make("gaussblur", failure: corrupt) { cvips_gaussblur(source.pointer, $0, sigma) }
            case let .sharpen(sigma):
                image = try VipsImage.make("sharpen", failure: corrupt) { cvips_sharpen(source.pointer, $0, sigma) }
            }
        }
        let result = image
        stop?.watch(result)
        // Pixels are decoded lazily while encoding, so a truncated input fails here.
        return try withExtendedLifetime(stop) { () throws(Error) -> Result in
            try result.encode(encoding, failure: corrupt) {
                body(EncodedBytes(bytes: $0, width: result.width, height: result.height, mimeType: encoding.format.mimeType))
            }
        }
    }

    /// Refuses a step or an encoding out of range, before anything is decoded.
    func check(_ operations: [Operation], _ encoding: Encoding) throws(Error) {
        let sides = 1...limits.maxSide
        for step in operations {
            switch step {
            case .autoRotate:
                break
            case let .rotate(degrees):
                guard [0, 90, 180, 270].contains(degrees) else { throw .invalidArgument("rotation of \(degrees) degrees: use 0, 90, 180 or 270") }
            case let .crop(_, _, width, height), let .smartCrop(width, height), let .resize(width, height), let .extend(_, _, width, height):
                guard width >= 1, height >= 1 else {
                    throw .invalidArgument("\(step) makes a \(width)x\(height) image: each side must be 1...\(limits.maxSide)")
                }
                // An enlargement or an extension costs its result's pixels, whatever the source's.
                guard sides.contains(width), sides.contains(height), width.multipliedReportingOverflow(by: height).partialValue <= limits.maxPixels,
                      !width.multipliedReportingOverflow(by: height).overflow
                else { throw .resultTooLarge(width: width, height: height, limit: limits.maxPixels) }
            case .flatten:
                break
            case let .blur(sigma), let .sharpen(sigma):
                guard sigma > 0, sigma <= 1000 else { throw .invalidArgument("\(step): sigma must be over 0 and at most 1000") }
            }
        }
        guard (1...100).contains(encoding.quality) else {
            throw .invalidArgument("quality \(encoding.quality) must be 1...100")
        }
    }
}

extension VipsImage {
    /// Encodes with `encoding` and hands `body` the bytes in libvips' own buffer, freed when
    /// `body` returns. Pixels are decoded while encoding: `failure` says what a failure means.
    func encode<Result>(
        _ encoding: Imaging.Encoding, failure: (String) -> Imaging.Error, _ body: (UnsafeRawBufferPointer) -> Result
    ) throws(Imaging.Error) -> Result {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let quality = Int32(encoding.quality)
        let strip: Int32 = encoding.keepsMetadata ? 0 : 1
        let status = switch encoding.format {
        case .jpeg: cvips_jpegsave_buffer_q(pointer, &buffer, &length, quality, strip)
        case .png: cvips_pngsave_buffer_s(pointer, &buffer, &length, strip)
        case .webp: cvips_webpsave_buffer_q(pointer, &buffer, &length, quality, strip)
        case .avif: cvips_avifsave_buffer_q(pointer, &buffer, &length, quality, 1, strip)
        case .gif: cvips_gifsave_buffer_s(pointer, &buffer, &length, strip)
        }
        guard status == 0, let buffer else {
            throw failure(VipsRuntime.takeErrorMessage())
        }
        defer { cvips_free(buffer) }
        return body(UnsafeRawBufferPointer(start: buffer, count: length))
    }
}
