public import Foundation
public import HTTPCaching

/// Fetches the original bytes of an image from its origin.
///
/// The default is ``HTTPImageFetcher``; tests inject doubles for faults that are hard to
/// cause for real. Implementations must be safe to call from many tasks at once and should
/// stop promptly when the calling task is cancelled.
public protocol ImageFetching: Sendable {
    /// Fetches `request.url` and returns its bytes as they are (no processing).
    /// - Throws: ``ImagePipeline/Error`` for HTTP, network and size failures; `CancellationError`
    ///   when cancelled.
    func fetch(_ request: ImageRequest) async throws -> Image

    /// Fetches `request.url`, conditionally on `stored` when given (its validators as
    /// `If-None-Match` / `If-Modified-Since`). The default ignores `stored` and calls
    /// ``fetch(_:)``, so a fetcher that does not speak HTTP always answers with bytes.
    func fetch(_ request: ImageRequest, revalidating stored: CacheHeaders?) async throws -> OriginResponse

    /// Whether this fetcher can ask for `url` at all. The pipeline refuses a request for any
    /// other URL when it is made, with ``ImagePipeline/Error/invalidURL(_:)``, before anything is
    /// asked, and remembers nothing. The default takes `http` and `https` URLs with a host.
    func canFetch(_ url: URL) -> Bool
}

/// The origin's answer to a fetch.
public enum OriginResponse: Sendable {
    /// New bytes (a 2xx), with what the origin said about caching them.
    case fetched(Image)
    /// `304 Not Modified`: the stored bytes are current; these are the stored headers updated
    /// with the 304's (RFC 9111 4.3.4).
    case notModified(CacheHeaders)
    /// `404 Not Found` or `410 Gone` with a lifetime (`max-age` or `Expires`): the origin does not
    /// have the resource and says for how long that answer holds, so the cache remembers it
    /// (RFC 9111 allows storing a 404). Without a lifetime a fetcher throws
    /// ``ImagePipeline/Error/httpStatus(_:url:)`` instead.
    case missing(status: Int, CacheHeaders)
}

extension ImageFetching {
    public func canFetch(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return url.host?.isEmpty == false
    }

    public func fetch(_ request: ImageRequest, revalidating stored: CacheHeaders?) async throws -> OriginResponse {
        .fetched(try await fetch(request))
    }
}

extension OriginResponse {
    /// The fetched image, for a fetcher's unconditional `fetch(_:)` built on its conditional
    /// one: a 304 or a remembered 404 is no image, and is its `httpStatus` error.
    package func fetchedImage(url: URL) throws(ImagePipeline.Error) -> Image {
        switch self {
        case let .fetched(image): image
        case .notModified: throw .httpStatus(304, url: url.absoluteString)
        case let .missing(status, _): throw .httpStatus(status, url: url.absoluteString)
        }
    }
}
