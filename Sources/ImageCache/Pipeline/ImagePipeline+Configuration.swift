public import Foundation
public import Logging

extension ImagePipeline {
    /// Everything a pipeline is made with, in one flat value: memory, disk, fetcher, limits,
    /// failure expiries, logger, and the base URL and processor of the book's entry points.
    public struct Configuration: Sendable {
        /// Resolves the server paths of ``ImagePipeline/image(_:)``.
        public var baseURL: URL?
        /// Applied by ``ImagePipeline/image(_:)`` and the `fetch` entry points: the book's
        /// thumbnails are a variant of each image, cached under its own key.
        public var processor: (any ImageProcessing)?
        /// The memory tier's budget in bytes (each image costs its bytes and a little more).
        public var memoryCostLimit: Int
        /// The most images the memory tier holds.
        public var memoryCountLimit: Int
        /// Where the disk tier lives; `nil` for memory and network only.
        public var diskDirectory: URL?
        /// The disk tier's budget in bytes; the least recently used entries go first.
        public var diskSizeLimit: Int
        /// Whether each disk write is `fsync`ed before its rename (crash-safe; off for tests
        /// and benchmarks on a disk nobody keeps).
        public var synchronizesWrites: Bool
        /// Where originals come from: HTTP (``HTTPImageFetcher``, with its time-out and body
        /// limit) by default.
        public var fetcher: any ImageFetching
        /// How long a permanent failure (a 404, a checksum mismatch, an undecodable image) is
        /// answered without asking again.
        public var permanentFailureExpiry: Duration
        /// How long a transient failure (a time-out, a 5xx) is answered without asking again.
        public var transientFailureExpiry: Duration
        /// How long an origin no connection could be made to is not asked again, for any of its
        /// images (``Error/originUnreachable(url:reason:)``): a cache with stale entries answers
        /// at once instead of each request trying to connect again. Default 2 s.
        public var unreachableOriginExpiry: Duration
        /// How many of each stage run at once, and how long work may wait.
        public var limits: Limits
        /// Where the pipeline logs damaged entries, disk failures, stale answers and each failed
        /// load (once per failure remembered, with its key; a 404 at `.debug`).
        public var logger: Logger

        /// Creates a configuration; every value has a default.
        public init(
            baseURL: URL? = nil,
            processor: (any ImageProcessing)? = nil,
            memoryCostLimit: Int = 64 * 1024 * 1024,
            memoryCountLimit: Int = 1000,
            diskDirectory: URL? = nil,
            diskSizeLimit: Int = 512 * 1024 * 1024,
            synchronizesWrites: Bool = true,
            fetcher: any ImageFetching = HTTPImageFetcher(),
            permanentFailureExpiry: Duration = .seconds(300),
            transientFailureExpiry: Duration = .seconds(5),
            unreachableOriginExpiry: Duration = .seconds(2),
            limits: Limits = .init(),
            logger: Logger = Logger(label: "ImageCache")
        ) {
            self.baseURL = baseURL
            self.processor = processor
            self.memoryCostLimit = memoryCostLimit
            self.memoryCountLimit = memoryCountLimit
            self.diskDirectory = diskDirectory
            self.diskSizeLimit = diskSizeLimit
            self.synchronizesWrites = synchronizesWrites
            self.fetcher = fetcher
            self.permanentFailureExpiry = permanentFailureExpiry
            self.transientFailureExpiry = transientFailureExpiry
            self.unreachableOriginExpiry = unreachableOriginExpiry
            self.limits = limits
            self.logger = logger
        }

        /// The library's default disk directory: `$XDG_CACHE_HOME/ImageCache`, else
        /// `~/.cache/ImageCache`. An app passes its own.
        public static var defaultDirectory: URL { cacheDirectory(named: "ImageCache") }

        /// The XDG cache directory `name`: `$XDG_CACHE_HOME/name` (when absolute), else
        /// `~/.cache/name`. An app names its own (`emojiart` does).
        public static func cacheDirectory(named name: String) -> URL {
            let environment = ProcessInfo.processInfo.environment
            if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
                return URL(fileURLWithPath: xdg).appendingPathComponent(name)
            }
            let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
            return URL(fileURLWithPath: home).appendingPathComponent(".cache").appendingPathComponent(name)
        }
    }
}
