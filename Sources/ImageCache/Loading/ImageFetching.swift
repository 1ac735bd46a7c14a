/// Fetches the original bytes of an image from its origin.
///
/// The default is ``HTTPImageFetcher``; tests inject doubles for faults that are hard to
/// cause for real. Implementations must be safe to call from many tasks at once and should
/// stop promptly when the calling task is cancelled.
public protocol ImageFetching: Sendable {
    /// Fetches `request.url` and returns its bytes as they are (no processing).
    /// - Throws: ``ImageLoader/Error`` for HTTP, network and size failures; `CancellationError`
    ///   when cancelled.
    func fetch(_ request: ImageRequest) async throws -> Image
}
