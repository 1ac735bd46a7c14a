public import ImageCache
public import Imaging

/// Makes the app's variants with libvips: a PNG that fits in a `size` x `size` box, never
/// upscaled. The cache calls it off its actors; it is safe to call from many tasks at once.
public struct ThumbnailProcessor: ImageProcessing {
    /// Side of the bounding box in pixels.
    public let size: Int
    /// The output encoding.
    public let format: OutputFormat
    private let imaging: Imaging

    /// Creates a processor for `size` x `size` thumbnails.
    public init(size: Int, format: OutputFormat = .png, limits: Imaging.Limits = .default) {
        self.size = size
        self.format = format
        imaging = Imaging(limits: limits)
    }

    /// `thumbnail-200-png`: part of the cache key.
    public var identifier: String { "thumbnail-\(size)-\(format)" }

    public func process(_ image: ImageCache.Image) async throws -> ImageCache.Image {
        let thumbnail = try imaging.thumbnail(image.data, fitting: size, format: format)
        return ImageCache.Image(
            data: thumbnail.data, contentType: thumbnail.mimeType,
            pixelSize: .init(width: thumbnail.width, height: thumbnail.height)
        )
    }
}
