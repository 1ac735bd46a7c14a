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
    /// The number of frames (pages): more than 1 for an animation. ``width`` and ``height`` are
    /// one frame's.
    public var frames: Int
    /// The EXIF orientation, 1 (upright) to 8; 1 when the header has none.
    public var orientation: Int

    /// Creates an info value.
    public init(format: ImageFormat, width: Int, height: Int, bands: Int, hasAlpha: Bool, frames: Int = 1, orientation: Int = 1) {
        self.format = format
        self.width = width
        self.height = height
        self.bands = bands
        self.hasAlpha = hasAlpha
        self.frames = frames
        self.orientation = orientation
    }

    /// Whether turning the image upright by its ``orientation`` swaps width and height (5 to 8).
    public var orientationSwapsSides: Bool { (5...8).contains(orientation) }
}
