public import Foundation

extension ImagePipeline {
    /// Limits, expiries and the variant the book's entry points make.
    public struct Configuration: Sendable {
        /// Base URL that ``ImageLoader/image(_:)`` and ``ImageDatabase/image(_:)-(String)``
        /// resolve server paths against, as in the book.
        public var baseURL: URL?
        /// The variant ``ImageLoader/image(_:)``, ``ImageLoader/fetch(_:)-(URL)`` and
        /// ``ImageLoader/fetch(_:)-(URLRequest)`` produce;
        /// `nil` returns the original bytes. The book's loader made 200x200 thumbnails.
        public var processor: (any ImageProcessing)?
        /// Largest total size of images kept in memory, in bytes. Default 64 MB.
        public var memoryCostLimit: Int
        /// Largest number of images kept in memory. Default 1000.
        public var memoryCountLimit: Int
        /// How long 404, 410, checksum and processing failures are remembered. Default 5 minutes.
        public var permanentFailureExpiry: Duration
        /// How long 5xx, timeouts and broken connections are remembered. Default 5 seconds.
        public var transientFailureExpiry: Duration
        /// How much of each stage's work runs at once, and how long work may queue.
        public var limits: Limits

        /// Creates a configuration.
        public init(
            baseURL: URL? = nil,
            processor: (any ImageProcessing)? = nil,
            memoryCostLimit: Int = 64 * 1024 * 1024,
            memoryCountLimit: Int = 1000,
            permanentFailureExpiry: Duration = .seconds(300),
            transientFailureExpiry: Duration = .seconds(5),
            limits: Limits = .init()
        ) {
            self.baseURL = baseURL
            self.processor = processor
            self.memoryCostLimit = memoryCostLimit
            self.memoryCountLimit = memoryCountLimit
            self.permanentFailureExpiry = permanentFailureExpiry
            self.transientFailureExpiry = transientFailureExpiry
            self.limits = limits
        }
    }
    /// `serverPath` resolved against ``Configuration/baseURL``, as both faces' `image(_:)` take
    /// it; an absolute URL stays as it is.
    func resolve(_ serverPath: String) throws(Error) -> URL {
        if let absolute = URL(string: serverPath), absolute.scheme != nil { return absolute }
        guard let base = configuration.baseURL, let url = URL(string: serverPath, relativeTo: base)?.absoluteURL else {
            throw .invalidURL(serverPath)
        }
        return url
    }
}
