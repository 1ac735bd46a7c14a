import Clocks
import Foundation
import Logging
import Synchronization

/// The book's `@globalActor ImageDatabase`: memory, then a download in flight, then a
/// persistent, crash-safe disk cache, then the network, with live hit counters.
///
/// Isolation: a global actor guarding set-up state. A memory hit is answered without hopping
/// onto it (the memory tier is behind a mutex); every other lookup joins the loader's single
/// download for its key, so N concurrent requests cause one disk read or one origin fetch.
/// Disk I/O, hashing and processing run in that download task, off both actors.
///
/// A disk that cannot be used (unwritable directory, full disk) is logged and counted, and
/// images keep loading from memory and network.
@globalActor
public actor ImageDatabase {
    /// The database of the process, configured from the environment (see
    /// ``Configuration/init(directory:diskSizeLimit:synchronizesWrites:loader:)``). Apps that take
    /// a `--cache-dir` make their own instance instead.
    public static let shared = ImageDatabase()

    /// Where and how much to cache.
    public struct Configuration: Sendable {
        /// The cache directory.
        public var directory: URL
        /// Largest total size on disk, in bytes. Default 512 MB.
        public var diskSizeLimit: Int
        /// Flush each entry to the device before renaming it into place. Default true.
        public var synchronizesWrites: Bool
        /// The memory tier's and the loader's configuration.
        public var loader: ImageLoader.Configuration

        /// Creates a configuration; the directory defaults to ``defaultDirectory``.
        public init(
            directory: URL = Configuration.defaultDirectory,
            diskSizeLimit: Int = 512 * 1024 * 1024,
            synchronizesWrites: Bool = true,
            loader: ImageLoader.Configuration = .init()
        ) {
            self.directory = directory
            self.diskSizeLimit = diskSizeLimit
            self.synchronizesWrites = synchronizesWrites
            self.loader = loader
        }

        /// `$XDG_CACHE_HOME/emojiart`, or `~/.cache/emojiart`.
        public static var defaultDirectory: URL {
            let environment = ProcessInfo.processInfo.environment
            if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
                return URL(fileURLWithPath: xdg).appendingPathComponent("emojiart")
            }
            let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
            return URL(fileURLWithPath: home).appendingPathComponent(".cache/emojiart")
        }
    }

    /// The configuration this database was made with.
    public nonisolated let configuration: Configuration
    /// The memory tier and single-flight downloads.
    public nonisolated let imageLoader: ImageLoader
    /// The disk tier.
    public nonisolated let storage: DiskStorage
    nonisolated let logger: Logger

    nonisolated let diskHits = LiveCounter()
    nonisolated let originFetches = LiveCounter()
    nonisolated let corruptEntries = LiveCounter()
    nonisolated let diskFailures = LiveCounter()

    private var setUpReport: DiskStorage.SetUpReport?
    private var diskError: ImageLoader.Error?
    private var isSetUp = false
    /// After set-up: the disk tier, or nil when it is unusable. Read on every miss, so it sits
    /// behind a mutex rather than costing a hop onto this actor.
    private nonisolated let readyDisk = Mutex<DiskStorage??>(.none)

    /// Whether the disk tier is in use (false until set up, or when it failed).
    var isDiskAvailable: Bool { isSetUp && diskError == nil }

    /// Creates a database.
    /// - Parameters:
    ///   - fetcher: where originals come from; HTTP by default.
    ///   - clock: the clock failure expiries run on; tests pass a `TestClock`.
    public init(
        configuration: Configuration = .init(),
        fetcher: any ImageFetching = HTTPImageFetcher(),
        clock: some Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "ImageCache.ImageDatabase")
    ) {
        self.configuration = configuration
        self.logger = logger
        imageLoader = ImageLoader(configuration: configuration.loader, fetcher: fetcher, clock: clock)
        storage = DiskStorage(
            directory: configuration.directory, sizeLimit: configuration.diskSizeLimit,
            synchronizesWrites: configuration.synchronizesWrites, logger: logger
        )
    }

    /// Prepares the disk tier: creates the directory, deletes leftovers of killed writers and
    /// indexes the entries. Called on first use when not called before; safe to call again.
    ///
    /// Never throws: a disk that cannot be used is logged, counted and reported here, and the
    /// database runs on memory and network.
    @discardableResult
    public func setUp() async -> Result<DiskStorage.SetUpReport, ImageLoader.Error> {
        let storage = storage
        let result = await offActor {
            Result { () throws(ImageLoader.Error) in try storage.setUp() }
        }
        isSetUp = true
        readyDisk.withLock { $0 = .some(result.isSuccess ? storage : nil) }
        switch result {
        case let .success(report):
            setUpReport = report
            diskError = nil
            logger.debug("disk cache ready", metadata: [
                "directory": "\(storage.directory.path)", "entries": "\(report.entries)", "bytes": "\(report.bytes)",
            ])
        case let .failure(error):
            diskError = error
            diskFailures.increment()
            logger.error("disk cache unavailable, using memory and network only: \(error)")
        }
        return result
    }

    // MARK: - Loading

    /// Loads the image at `key`: a server path resolved against the loader's base URL, or an
    /// absolute URL, as the loader's configured variant (the book's `image(_:)`).
    public func image(_ key: String) async throws -> Image {
        let url = try imageLoader.resolve(key)
        return try await image(ImageRequest(url: url, processor: configuration.loader.processor))
    }

    /// Loads `request`: memory, then the download in flight, then disk, then the network.
    ///
    /// A variant (a request with a processor) is made from the original, which goes through
    /// the same path, so it is fetched once for all variants and cached on disk too.
    public nonisolated func image(_ request: ImageRequest) async throws -> Image {
        if let image = imageLoader.memory.image(forKey: request.cacheKey) {
            return image
        }
        let storage = if let ready = readyDisk.withLock({ $0 }) { ready } else { await readyStorage() }
        return try await imageLoader.image(forKey: request.cacheKey, retryingFailures: request.retryingFailures) {
            try await self.load(request, storage: storage)
        }
    }

    /// The disk tier once set up, or `nil` when it is unusable.
    private func readyStorage() async -> DiskStorage? {
        if !isSetUp { await setUp() }
        return diskError == nil ? storage : nil
    }

    /// Disk, then origin or processing, then store. Runs in the loader's download task.
    private nonisolated func load(_ request: ImageRequest, storage: DiskStorage?) async throws -> Image {
        let key = request.cacheKey
        if let storage {
            do {
                if let image = try storage.read(forKey: key) {
                    diskHits.increment()
                    return image
                }
            } catch let error {
                if case .corruptEntry = error { corruptEntries.increment() } else { diskFailures.increment() }
                logger.warning("\(error)")
            }
        }
        try Task.checkCancellation()
        let image: Image
        if let processor = request.processor {
            let original = try await self.image(request.original)
            image = try await ImageLoader.process(original, with: processor)
        } else {
            originFetches.increment()
            image = try ImageLoader.verified(try await imageLoader.fetcher.fetch(request), request: request)
        }
        if let storage { write(image, forKey: key, to: storage) }
        return image
    }

    private nonisolated func write(_ image: Image, forKey key: String, to storage: DiskStorage) {
        do {
            try storage.write(image, forKey: key)
        } catch {
            diskFailures.increment()
            logger.error("\(error)")
        }
    }

    /// Keeps `image` under `key` in memory and on disk (the book's `store(image:forKey:)`).
    public func store(image: Image, forKey key: String) async {
        await imageLoader.add(image, forKey: key)
        if let storage = await readyStorage() {
            await offActor { self.write(image, forKey: key, to: storage) }
        }
    }

    // MARK: - Clearing

    /// Deletes every entry on disk (the book's "clear disk cache").
    public func clear() async {
        if let storage = await readyStorage() {
            await offActor { storage.removeAll() }
        }
    }

    /// Runs blocking work (file I/O) on the concurrent pool instead of this actor's executor.
    @concurrent
    private nonisolated func offActor<T: Sendable>(_ work: @Sendable () -> T) async -> T {
        work()
    }

    /// Empties the memory tier and forgets remembered failures ("clear memory cache").
    public func clearMemory() async {
        await imageLoader.clear()
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { true } else { false }
    }
}
