import CVips

extension Imaging {
    /// Decodes `data` and returns the band values of the pixel at (`x`, `y`), for example
    /// `[r, g, b]` for an RGB image. Checks the same limits as ``probe(_:)``.
    /// - Throws: any ``Error`` ``probe(_:)`` throws; ``Error/invalidArgument(_:)`` when the point
    ///   is outside the image; ``Error/corrupt(format:detail:)`` when decoding fails.
    public func pixel(_ data: [UInt8], x: Int, y: Int) throws(Error) -> [Double] {
        try withBytes(data) { (bytes) throws(Error) -> [Double] in
            let info = try probe(bytes)
            guard (0..<info.width).contains(x), (0..<info.height).contains(y) else {
                throw .invalidArgument("point (\(x), \(y)) is outside the \(info.width)x\(info.height) image")
            }
            guard let opened = cvips_image_new_from_buffer(bytes.baseAddress!, bytes.count, "fail_on=truncated") else {
                throw .corrupt(format: info.format, detail: VipsRuntime.takeErrorMessage())
            }
            let image = VipsImage(opened)
            var vector: UnsafeMutablePointer<Double>?
            var count: Int32 = 0
            guard cvips_getpoint(image.pointer, &vector, &count, Int32(x), Int32(y)) == 0, let vector else {
                throw .corrupt(format: info.format, detail: VipsRuntime.takeErrorMessage())
            }
            defer { cvips_free(vector) }
            return Array(UnsafeBufferPointer(start: vector, count: Int(count)))
        }
    }
}
