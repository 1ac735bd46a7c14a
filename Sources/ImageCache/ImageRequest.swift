public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// What to load: a URL, optionally a processor to apply (a variant such as "thumbnail 200"),
/// and optionally the SHA-256 the original bytes must have.
///
/// The cache key is the URL plus the processor's identifier, so each variant is cached on its
/// own while the original bytes are fetched once for all of them.
public struct ImageRequest: Sendable {
    /// The URL of the original image.
    public var url: URL { didSet { (cacheKey, originalCacheKey) = Self.keys(url, processor, acceptsAnyData) } }
    /// Extra request headers sent to the origin.
    public var headers: [String: String]
    /// The processor making this variant; `nil` for the original bytes.
    public var processor: (any ImageProcessing)? { didSet { (cacheKey, originalCacheKey) = Self.keys(url, processor, acceptsAnyData) } }
    /// Lowercase hex SHA-256 the original bytes must have (the feed's checksum); a mismatch is
    /// an error and nothing is cached.
    public var expectedSHA256: String?
    /// When true, a remembered failure for this key is forgotten and the load is tried again.
    public var retryingFailures: Bool
    /// How this request uses the cache; HTTP's rules by default. A variant's original is loaded
    /// under the same policy.
    public var cachePolicy: CachePolicy
    /// Where this request's work goes in each stage's queue; ``Priority/normal`` by default. To
    /// change it while the request waits, start it as an ``ImageTask``.
    public var priority: Priority
    /// Whether the origin's bytes are kept whatever they are. By default (`false`) bytes that
    /// begin as no image format the cache knows are refused with
    /// ``ImagePipeline/Error/notAnImage(url:contentType:)`` before they are answered or cached.
    /// A request that takes any data is cached under a key of its own (its ``cacheKey`` ends in
    /// `#data`), so its bytes never answer a request for an image.
    public var acceptsAnyData: Bool { didSet { (cacheKey, originalCacheKey) = Self.keys(url, processor, acceptsAnyData) } }

    /// Creates a request.
    /// - Parameters:
    ///   - url: the original image's URL.
    ///   - processor: the variant to make; `nil` for the original bytes.
    ///   - expectedSHA256: hex digest, with or without a `sha256:` prefix.
    ///   - headers: extra request headers for the origin.
    ///   - retryingFailures: forget a failure remembered for this key and try again.
    ///   - cachePolicy: how the request uses the cache.
    ///   - priority: where its work goes in each stage's queue.
    ///   - acceptsAnyData: keep the origin's bytes even when they are no image.
    public init(
        url: URL,
        processor: (any ImageProcessing)? = nil,
        expectedSHA256: String? = nil,
        headers: [String: String] = [:],
        retryingFailures: Bool = false,
        cachePolicy: CachePolicy = .useProtocolCachePolicy,
        priority: Priority = .normal,
        acceptsAnyData: Bool = false
    ) {
        self.url = url
        self.processor = processor
        self.acceptsAnyData = acceptsAnyData
        (cacheKey, originalCacheKey) = Self.keys(url, processor, acceptsAnyData)
        self.expectedSHA256 = expectedSHA256.map { digest in
            (digest.hasPrefix("sha256:") ? String(digest.dropFirst(7)) : digest).lowercased()
        }
        self.headers = headers
        self.retryingFailures = retryingFailures
        self.cachePolicy = cachePolicy
        self.priority = priority
    }

    /// Creates a request for the original bytes of a `URLRequest`: its URL, headers and cache
    /// policy.
    public init(_ urlRequest: URLRequest) throws(ImagePipeline.Error) {
        guard let url = urlRequest.url else { throw .invalidURL("a URLRequest without a URL") }
        self.init(url: url, headers: urlRequest.allHTTPHeaderFields ?? [:], cachePolicy: CachePolicy(urlRequest.cachePolicy))
    }

    /// The key this request's result is cached under: the URL (then `#data` when it
    /// ``acceptsAnyData``), then `#` and the processor's identifier for a variant. Computed once,
    /// when the URL, processor or ``acceptsAnyData`` is set.
    public private(set) var cacheKey: String

    /// The cache key of the original bytes: ``original``'s ``cacheKey``, kept so that a memory
    /// hit of a variant, which checks its original, builds no request and no string.
    private(set) var originalCacheKey: String

    private static func keys(_ url: URL, _ processor: (any ImageProcessing)?, _ anyData: Bool) -> (key: String, original: String) {
        let original = anyData ? url.absoluteString + "#data" : url.absoluteString
        guard let processor else { return (original, original) }
        return (original + "#" + processor.identifier, original)
    }

    /// The request for the original bytes this variant is made from.
    public var original: ImageRequest {
        var original = self
        original.processor = nil
        return original
    }
}
