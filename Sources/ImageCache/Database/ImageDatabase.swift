import Clocks
public import Foundation
public import Logging
import Synchronization

/// The book's `@globalActor ImageDatabase`: memory, then a download in flight, then a
/// persistent, crash-safe disk cache, then the network, with live hit counters.
///
/// Isolation: a global actor because the book's is one (code may still mark itself
/// `@ImageDatabase`); its isolation guards nothing. It is a face over an ``ImagePipeline``, which
/// owns every stage (memory, the flight of each key, disk, origin, processing, store) behind
/// mutexes, and every member is `nonisolated`: no call, `stats()` included, hops onto this
/// actor. A memory hit is a mutex lookup, a disk hit is read by the calling task, and N
/// concurrent requests for a key cause one disk read or one origin fetch. Disk I/O, hashing and
/// processing never run on an actor's executor.
///
/// HTTP freshness (RFC 9111, with RFC 5861's extensions): an original keeps the origin's
/// validators and freshness on disk with its bytes. A fresh entry is answered without a request;
/// a stale one is revalidated with `If-None-Match` / `If-Modified-Since` (a 304 refreshes it
/// without downloading it, a 200 replaces it), answered at once while one refresh runs in the
/// background inside `stale-while-revalidate`, and answered rather than an error when the origin
/// is unreachable or fails inside `stale-if-error`. `no-store` answers are never stored. Each
/// request may choose another ``CachePolicy``.
///
/// A disk that cannot be used (unwritable directory, full disk) is logged and counted, and
/// images keep loading from memory and network.
@globalActor
public actor ImageDatabase {
    /// The database of the process, configured from the environment (see
    /// ``Configuration/init(directory:diskSizeLimit:synchronizesWrites:loader:)``). Apps that take
    /// a `--cache-dir` make their own instance instead.
    public static let shared = ImageDatabase()

    /// The engine's limits, by the book's name (``ImagePipeline/Limits``).
    public typealias Limits = ImagePipeline.Limits
    /// The module's error, by the book's name (``ImagePipeline/Error``).
    public typealias Error = ImagePipeline.Error

    /// Where and how much to cache: the disk's settings, and the engine's configuration
    /// (``ImagePipeline/Configuration``) as `loader`.
    public struct Configuration: Sendable {
        /// The cache directory.
        public var directory: URL
        /// Largest total size on disk, in bytes. Default 512 MB.
        public var diskSizeLimit: Int
        /// Flush each entry to the device before renaming it into place. Default true.
        public var synchronizesWrites: Bool
        /// The memory tier's and the loader's configuration.
        public var loader: ImagePipeline.Configuration

        /// Creates a configuration; the directory defaults to ``defaultDirectory``.
        public init(
            directory: URL = Configuration.defaultDirectory,
            diskSizeLimit: Int = 512 * 1024 * 1024,
            synchronizesWrites: Bool = true,
            loader: ImagePipeline.Configuration = .init()
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
    /// The engine this database is a face of; ``imageLoader`` fronts the same one.
    public nonisolated let pipeline: ImagePipeline
    /// The memory tier and single flight: the book's loader, over this database's pipeline.
    public nonisolated let imageLoader: ImageLoader
    /// The disk tier.
    public nonisolated let storage: DiskStorage

    /// Creates a database.
    /// - Parameters:
    ///   - configuration: the directory, the disk limit and the loader's limits.
    ///   - fetcher: where originals come from; HTTP by default.
    ///   - clock: the clock failure expiries run on; tests pass a clock they move by hand.
    ///   - now: the wall clock HTTP freshness is judged by. Freshness must survive restarts,
    ///     so it is the date, not a duration clock; tests pass one they move.
    ///   - logger: where the cache logs damaged entries, disk failures, stale answers and each
    ///     failed load (once per failure remembered, with its key; a 404 at `.debug`).
    public init(
        configuration: Configuration = .init(),
        fetcher: any ImageFetching = HTTPImageFetcher(),
        clock: some Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger(label: "ImageCache.ImageDatabase")
    ) {
        self.configuration = configuration
        storage = DiskStorage(
            directory: configuration.directory, sizeLimit: configuration.diskSizeLimit,
            synchronizesWrites: configuration.synchronizesWrites, logger: logger
        )
        pipeline = ImagePipeline(
            configuration: configuration.loader, disk: storage, fetcher: fetcher, clock: clock, now: now, logger: logger
        )
        imageLoader = ImageLoader(pipeline: pipeline)
    }

    /// Prepares the disk tier: creates the directory, deletes leftovers of killed writers and
    /// indexes the entries. Runs once: concurrent and later calls await the same set-up, and the
    /// first lookup starts it when nobody called it before.
    ///
    /// Never throws: a disk that cannot be used is logged, counted and reported here, and the
    /// database runs on memory and network.
    @discardableResult
    public nonisolated func setUp() async -> Result<DiskStorage.SetUpReport, ImagePipeline.Error> {
        await pipeline.setUp()
    }

    // MARK: - Loading

    /// Loads the image at `key`: a server path resolved against the loader's base URL, or an
    /// absolute URL, as the loader's configured variant (the book's `image(_:)`).
    public nonisolated func image(_ key: String) async throws -> Image {
        let url = try pipeline.resolve(key)
        return try await image(ImageRequest(url: url, processor: configuration.loader.processor))
    }

    /// Loads `request`: memory, then the download in flight, then disk, then the network (see
    /// <doc:RequestFlow>).
    ///
    /// A variant (a request with a processor) is made from the original, which goes through
    /// the same path, so it is fetched once for all variants and cached on disk too.
    public nonisolated func image(_ request: ImageRequest) async throws -> Image {
        // Stage 1 here, before any call that may suspend: a memory hit costs no async call.
        switch pipeline.memoryLookup(request) {
        case let .answered(image): return image
        case let .notAnswered(stale, fills): return try await pipeline.load(request, stale: stale, fills: fills)
        }
    }

    /// Starts loading `request` (memory, disk, network) and returns its handle, to change its
    /// priority or cancel it.
    public nonisolated func imageTask(with request: ImageRequest) -> ImageTask {
        pipeline.imageTask(with: request)
    }

    /// The image for `request` if memory can answer it now, fresh enough by its ``CachePolicy``:
    /// counted as a memory hit (and refreshed in the background when stale-while-revalidate says
    /// so), exactly as ``image(_:)-(ImageRequest)`` would count it. `nil` when memory cannot
    /// answer, with nothing counted: then call ``image(_:)-(ImageRequest)``. Never suspends, so an
    /// HTTP server can answer memory hits on its event loop.
    public nonisolated func memoryImage(for request: ImageRequest) -> Image? {
        if case let .hit(image) = lookInMemory(request) { return image }
        return nil
    }

    /// What memory said of a request: an answer, or a miss to go on from.
    public enum MemoryLookup: Sendable {
        /// Memory answered, counted as ``memoryImage(for:)`` counts it.
        case hit(Image)
        /// Memory could not answer: ``image(after:)`` goes on from here without looking again.
        case miss(MemoryMiss)
    }

    /// A request memory could not answer, with what it found (an entry to revalidate, if any).
    public struct MemoryMiss: Sendable {
        /// The request memory could not answer.
        public let request: ImageRequest
        let stale: Image?
        /// What memory had been given when it was looked in (``MemoryCache/fills``).
        let fills: UInt64
    }

    /// Stage 1 of ``image(_:)-(ImageRequest)`` alone, as ``memoryImage(for:)``, keeping a miss
    /// so that a caller that has to hand the request on (an HTTP server's event loop to its
    /// route) goes on with ``image(after:)`` and memory is not looked in twice. Never suspends.
    public nonisolated func lookInMemory(_ request: ImageRequest) -> MemoryLookup {
        switch pipeline.memoryLookup(request) {
        case let .answered(image): .hit(image)
        case let .notAnswered(stale, fills): .miss(MemoryMiss(request: request, stale: stale, fills: fills))
        }
    }

    /// Stages 2-6 of ``image(_:)-(ImageRequest)`` after ``lookInMemory(_:)`` missed: the flight
    /// of the key, led or joined, disk, origin or processing, store. When memory held nothing,
    /// a new flight's leader looks in memory once more only if memory has gained an image (or
    /// an original's digest) since the miss (a flight may have ended in between); when it held a
    /// stale entry, memory is looked in again first (another request may have refreshed it in
    /// between, and the stale entry would be revalidated twice).
    public nonisolated func image(after miss: MemoryMiss) async throws -> Image {
        guard miss.stale == nil else { return try await image(miss.request) }
        return try await pipeline.load(miss.request, stale: nil, fills: miss.fills)
    }

    /// Whether `request`'s image is in memory or listed on disk: nothing is read, counted or
    /// made (``ImagePipeline/isCached(_:)``). An app that can answer with something else at
    /// once asks this before it decides to wait for slow processing.
    public nonisolated func isCached(_ request: ImageRequest) -> Bool {
        pipeline.isCached(request)
    }

    /// Whether the image of a request ``lookInMemory(_:)`` has just missed is listed on disk:
    /// ``isCached(_:)`` without looking in memory again (memory could not answer it).
    public nonisolated func isCached(after miss: MemoryMiss) -> Bool {
        pipeline.isListedOnDisk(miss.request)
    }

    /// Keeps `image` under `key` in memory and on disk (the book's `store(image:forKey:)`).
    /// The write and its flush run on the pipeline's I/O threads (``ImagePipeline/store(_:forKey:)``).
    public nonisolated func store(image: Image, forKey key: String) async {
        await pipeline.store(image, forKey: key)
    }

    /// The entry for `key` from memory or disk, however stale, with its ``Image/cacheHeaders``;
    /// never the network; a damaged entry is deleted, counted and answered `nil`. For callers that do their own HTTP exchange with the entry's
    /// validators and ``store(image:forKey:)`` the result (the app's signed feed).
    public nonisolated func cachedImage(forKey key: String) async -> Image? {
        if let image = pipeline.memory.peek(key) { return image }
        guard let disk = await pipeline.usableDisk() else { return nil }
        return pipeline.read(key, from: disk)
    }

    // MARK: - Clearing

    /// Deletes the entry for `key` from memory and disk: for callers that find an entry of
    /// theirs unfit to use (the app's stored feed, when its bytes are not those it authenticated).
    public nonisolated func removeEntry(forKey key: String) async {
        pipeline.memory.remove(forKey: key)
        if let disk = await pipeline.usableDisk() {
            disk.remove(forKey: key)
        }
    }

    /// Deletes every entry on disk (the book's "clear disk cache").
    public nonisolated func clear() async {
        if let disk = await pipeline.usableDisk() {
            disk.removeAll()
        }
    }

    /// Empties the memory tier and forgets remembered failures ("clear memory cache").
    public nonisolated func clearMemory() async {
        pipeline.clearMemory()
    }

    // MARK: - Counters

    /// A snapshot of what the database has done and holds (``ImagePipeline/Stats``).
    public typealias Stats = ImagePipeline.Stats

    /// The current counts and sizes.
    public nonisolated func stats() -> Stats {
        pipeline.stats()
    }

    /// The scheduling counts now, then after each change (work started, queued, finished,
    /// refused; a priority changed): to watch queues fill and drain without polling. Under load
    /// a slow listener sees only the newest counts.
    public nonisolated var onSchedulingChange: AsyncStream<SchedulingStats> {
        pipeline.onSchedulingChange
    }

    /// The number of disk hits so far, then each new count: the book's `onDiskAccess`.
    /// Every call returns a new stream; any number may be followed at once.
    public nonisolated var onDiskAccess: AsyncStream<Int> { pipeline.counters.diskHits.stream() }

    /// The number of memory hits so far, then each new count (the loader's `inMemoryAccess`).
    public nonisolated var onMemoryAccess: AsyncStream<Int> { pipeline.memory.hits.stream() }

    /// The number of conditional requests answered 304 so far, then each new count.
    public nonisolated var onRevalidation: AsyncStream<Int> { pipeline.counters.revalidations.stream() }

    /// The number of conditional requests answered with new bytes so far, then each new count.
    public nonisolated var onRefresh: AsyncStream<Int> { pipeline.counters.refreshed.stream() }

    /// The number of stale answers so far, then each new count.
    public nonisolated var onStaleAnswer: AsyncStream<Int> { pipeline.counters.staleAnswers.stream() }

    /// The number of requests sent to the origin so far, then each new count.
    public nonisolated var onOriginFetch: AsyncStream<Int> { pipeline.counters.originFetches.stream() }
}
