/// What a header says about an image, read without decoding its pixels.
public struct ImageInfo: Sendable, Hashable {
    /// The encoded format.
    public var format: ImageFormat
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Number of bands: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA.
    public var bands: Int
    /// Whether the image has an alpha channel.
    public var hasAlpha: Bool

    /// Creates an info value.
    public init(format: ImageFormat, width: Int, height: Int, bands: Int, hasAlpha: Bool) {
        self.format = format
        self.width = width
        self.height = height
        self.bands = bands
        self.hasAlpha = hasAlpha
    }
}
