/// An encoded image as the cache holds it: bytes, their content type and, when known, the
/// pixel size. A value type; `Sendable`.
public struct Image: Sendable, Hashable {
    /// Width and height in pixels.
    public struct PixelSize: Sendable, Hashable, CustomStringConvertible {
        /// Width in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int

        /// Creates a size.
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }

        public var description: String { "\(width)x\(height)" }
    }

    /// The encoded bytes (PNG, JPEG, WebP, ...).
    public var data: [UInt8]
    /// The MIME type of `data`, e.g. `image/png`.
    public var contentType: String
    /// The pixel size, when a processor or the origin made it known; `nil` for originals
    /// fetched as they are (the cache does not decode images itself).
    public var pixelSize: PixelSize?

    /// Creates an image.
    public init(data: [UInt8], contentType: String, pixelSize: PixelSize? = nil) {
        self.data = data
        self.contentType = contentType
        self.pixelSize = pixelSize
    }

    /// What the image costs in memory, in bytes.
    public var cost: Int { data.count + contentType.utf8.count + 64 }
}
