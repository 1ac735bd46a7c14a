/// Makes a variant of an image, such as a 200x200 thumbnail.
///
/// The cache calls `process` on its processing threads (never on Swift's cooperative threads:
/// see ``ImagePipeline/Limits``), at most ``ImagePipeline/Limits/processing`` at once, so an
/// implementation may do seconds of synchronous CPU work; it must be safe to call from several
/// threads at once. Awaiting inside it keeps its processing slot. The cache module has no image codec of its
/// own: the app injects one (EmojiArt's thumbnailer uses libvips).
public protocol ImageProcessing: Sendable {
    /// A stable name for this variant, part of the cache key: `thumbnail-200-png`.
    /// Two processors with the same identifier must produce the same output.
    var identifier: String { get }

    /// Makes the variant from the original image.
    /// - Throws: any error; the cache reports it as ``ImagePipeline/Error/processingFailed(processor:underlying:)`` (your error as
    ///   `underlying`)
    ///   and remembers it as a permanent failure.
    func process(_ image: Image) async throws -> Image
}
