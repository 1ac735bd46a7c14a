import CVips

extension Imaging {
    /// How a thumbnail is judged: a reference made in float from the same input, and the mean
    /// absolute difference between two images.
    public enum ReferenceResize: Sendable {
        /// Premultiplied by alpha, resized in float in one Lanczos-3 step, unpremultiplied: the
        /// right answer a faster path is measured against.
        case premultiplied
        /// Resized without premultiplying: what bleeds the colour of transparent pixels into
        /// semi-transparent edges. Kept so a test can show that its check tells the two apart.
        case straight
    }

    /// A float reference thumbnail of `data` at exactly `width` x `height`, as 8-bit PNG.
    /// Slow on purpose: for tests and benchmarks.
    /// - Throws: what ``probe(_:)`` throws; ``Error/corrupt(format:detail:)``.
    public func referenceThumbnail(
        _ data: [UInt8], width: Int, height: Int, resize: ReferenceResize = .premultiplied
    ) throws(Error) -> [UInt8] {
        try withBytes(data) { (bytes) throws(Error) -> [UInt8] in
            let info = try probe(bytes)
            let failure = { (detail: String) in Error.corrupt(format: info.format, detail: detail) }
            guard let loaded = cvips_image_new_from_buffer(bytes.baseAddress!, bytes.count, "fail_on=truncated") else {
                throw failure(VipsRuntime.takeErrorMessage())
            }
            let input = VipsImage(loaded)
            let premultiply = resize == .premultiplied && input.hasAlpha
            let prepared = premultiply ? try VipsImage.make("premultiply", failure: failure) { cvips_premultiply(input.pointer, $0) } : input
            let resized = try VipsImage.make("resize", failure: failure) {
                cvips_resize(prepared.pointer, $0, Double(width) / Double(info.width), Double(height) / Double(info.height))
            }
            let straight = premultiply ? try VipsImage.make("unpremultiply", failure: failure) { cvips_unpremultiply(resized.pointer, $0) } : resized
            let output = try VipsImage.make("cast", failure: failure) { cvips_cast_uchar(straight.pointer, $0) }
            return try output.encode(.png, failure: failure)
        }
    }

    /// The mean absolute difference of two encoded images of the same size and bands, over
    /// every pixel and band, in 8-bit levels (0 for identical pixels, 255 at most). With alpha,
    /// the premultiplied values are compared: what is seen, so the colour of a pixel that is
    /// all but transparent (where rounding swings widely) hardly counts, and colour bled into a
    /// semi-transparent edge counts fully.
    /// - Throws: ``Error/invalidArgument(_:)`` when the sizes or bands differ; what decoding throws.
    public func meanAbsoluteDifference(_ a: [UInt8], _ b: [UInt8]) throws(Error) -> Double {
        let first = try decoded(a)
        let second = try decoded(b)
        guard first.width == second.width, first.height == second.height, first.bands == second.bands else {
            throw .invalidArgument("images differ in shape: \(first.width)x\(first.height)x\(first.bands) and \(second.width)x\(second.height)x\(second.bands)")
        }
        var mean = 0.0
        guard cvips_mean_abs_difference(first.pointer, second.pointer, &mean) == 0 else {
            throw .encodeFailed(format: "difference", detail: VipsRuntime.takeErrorMessage())
        }
        return mean
    }

    private func decoded(_ data: [UInt8]) throws(Error) -> VipsImage {
        try withBytes(data) { (bytes) throws(Error) -> VipsImage in
            let info = try probe(bytes)
            // Random access: the comparison reads the whole image, and the buffer outlives it
            // only inside this call, so the pixels are decoded now.
            guard let loaded = cvips_image_new_from_buffer(bytes.baseAddress!, bytes.count, "fail_on=truncated") else {
                throw .corrupt(format: info.format, detail: VipsRuntime.takeErrorMessage())
            }
            let image = VipsImage(loaded)
            return try VipsImage.make("copy", failure: { .corrupt(format: info.format, detail: $0) }) {
                cvips_copy_memory(image.pointer, $0)
            }
        }
    }
}
