public import Clocks
public import Foundation
import Logging
import Synchronization
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Loads images and keeps them in memory: the book's `ImageLoader` actor and the article's
/// `fetch(_:)` entry points, made bounded, failure-aware and cancellable.
///
/// Isolation: an actor because the book's is one, so code written against the book keeps its
/// shape; its isolation guards nothing. Every state lives in the `ImagePipeline` it fronts
/// (behind mutexes) and every member is `nonisolated`: no call, `add(_:forKey:)`,
/// `state(forKey:)` and `cache` included, ever hops onto this actor. Fetching, hashing and
/// processing run in the calling task, the download's task or the pipeline's worker threads.
///
/// - Concurrent requests for one key share one download (registered before the first
///   suspension point, so no caller can slip in between).
/// - Completed images live in a memory cache bounded by total bytes and count, least recently
///   used out first; an image bigger than a tenth of the byte limit is returned but not kept.
/// - Images from HTTP are answered by RFC 9111's rules and the request's ``CachePolicy``: fresh
///   ones at once, stale ones after a conditional request (see ``ImageDatabase``).
/// - Failures are remembered with their reason until an expiry (short for transient errors,
///   longer for permanent ones); ``clear()`` or a request with `retryingFailures` forgets them.
/// - A waiter that cancels gets `CancellationError` at once and the others are unaffected; when
///   the last waiter of a download cancels, the download is cancelled.
public actor ImageLoader {
    /// Where a key stands, as in the book: in progress, completed, or failed (with until when).
    public enum DownloadState: Sendable {
        /// A download is running; awaiting the task joins it.
        case inProgress(Task<Image, any Swift.Error>)
        /// The image is in the memory cache.
        case completed(Image)
        /// The last attempt failed; requests fail fast with `reason` until `until`.
        case failed(Error, until: AnyClock<Duration>.Instant)
    }

    /// The engine's configuration, by the book's name (``ImagePipeline/Configuration``).
    public typealias Configuration = ImagePipeline.Configuration
    /// The engine's limits, by the book's name (``ImagePipeline/Limits``).
    public typealias Limits = ImagePipeline.Limits
    /// The module's error, by the book's name (``ImagePipeline/Error``).
    public typealias Error = ImagePipeline.Error

    /// The engine this loader is a face of.
    public nonisolated let pipeline: ImagePipeline

    /// The configuration this loader was made with.
    public nonisolated var configuration: Configuration { pipeline.configuration }
    /// Where originals come from.
    public nonisolated var fetcher: any ImageFetching { pipeline.fetcher }
    /// The memory tier, readable without hopping onto this actor.
    public nonisolated var memory: MemoryCache { pipeline.memory }

    /// Creates a loader with memory and single flight, and no disk (``ImageDatabase`` adds one).
    /// - Parameters:
    ///   - configuration: limits, expiries and the variant ``image(_:)`` makes.
    ///   - fetcher: where originals come from; HTTP by default.
    ///   - clock: the clock failure expiries are measured on; tests pass a clock they move by hand.
    ///   - now: the wall clock HTTP freshness is judged by; tests pass one they move.
    public init(
        configuration: Configuration = .init(),
        fetcher: any ImageFetching = HTTPImageFetcher(),
        clock: some Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        pipeline = ImagePipeline(
            configuration: configuration, fetcher: fetcher, clock: clock, now: now, logger: Logger(label: "ImageCache.ImageLoader")
        )
    }

    /// A face over an existing pipeline: a database's, or one made by hand.
    public init(pipeline: ImagePipeline) {
        self.pipeline = pipeline
    }

    // MARK: - The book's and the article's entry points

    /// Loads the image at `serverPath`, relative to ``ImagePipeline/Configuration/baseURL``, as the
    /// configured variant.
    public nonisolated func image(_ serverPath: String) async throws -> Image {
        try await image(for: ImageRequest(url: pipeline.resolve(serverPath), processor: configuration.processor))
    }

    /// Loads the image at `url` as the configured variant (the article's `fetch(_ url:)`).
    public nonisolated func fetch(_ url: URL) async throws -> Image {
        try await image(for: ImageRequest(url: url, processor: configuration.processor))
    }

    /// Loads the image of `urlRequest` (URL and headers) as the configured variant (the
    /// article's `fetch(_ urlRequest:)`).
    public nonisolated func fetch(_ urlRequest: URLRequest) async throws -> Image {
        var request = try ImageRequest(urlRequest)
        request.processor = configuration.processor
        return try await image(for: request)
    }

    /// Loads `request` from memory, a running download, or the origin; a variant is made from
    /// the original, which is fetched once however many variants ask for it.
    public nonisolated func image(for request: ImageRequest) async throws -> Image {
        // Stage 1 here, before any call that may suspend: a memory hit costs no async call.
        switch pipeline.memoryLookup(request) {
        case let .answered(image): return image
        case let .notAnswered(stale, fills): return try await pipeline.load(request, stale: stale, fills: fills)
        }
    }

    /// Starts loading `request` and returns its handle, to change its priority or cancel it.
    public nonisolated func imageTask(with request: ImageRequest) -> ImageTask {
        pipeline.imageTask(with: request)
    }

    /// Puts `image` in the memory cache under `key` (the book's `add(_:forKey:)`), forgetting a
    /// failure remembered for it.
    public nonisolated func add(_ image: Image, forKey key: String) {
        pipeline.insert(image, forKey: key)
    }

    /// Empties the memory cache and forgets remembered failures (running downloads go on).
    public nonisolated func clear() {
        pipeline.clearMemory()
    }

    /// Forgets the failure remembered for `key`, so the next request tries again.
    public nonisolated func forgetFailure(forKey key: String) {
        pipeline.forgetFailure(forKey: key)
    }

    /// The state of `key`: in progress, completed (in memory) or failed (not yet expired).
    public nonisolated func state(forKey key: String) -> DownloadState? {
        let now = pipeline.clock.now
        let (work, failure) = pipeline.bookkeeping.withLock { machine in
            // A lookup's flight, else a reload's or a revalidation's of the same key.
            var work: Task<Image, any Swift.Error>?
            for flightKey in [key] + ImagePipeline.flightSuffixes.map({ key + $0 }) where work == nil {
                work = machine.flight(forKey: flightKey)?.work
            }
            return (work, machine.failure(key, now: now))
        }
        if let work { return .inProgress(work) }
        if let image = memory.peek(key) { return .completed(image) }
        if let failure { return .failed(failure.failure.error, until: failure.until) }
        return nil
    }

    /// How many callers are waiting for the download of `key` (0 when none is running).
    public nonisolated func waiterCount(forKey key: String) -> Int {
        pipeline.bookkeeping.withLock { $0.waiterCount(key) }
    }

    /// Every key's state, as the book's `cache` dictionary.
    public nonisolated var cache: [String: DownloadState] {
        // A reload's or a revalidation's flight runs under its key plus a suffix: list the key.
        let keys = pipeline.bookkeeping.withLock { Set($0.flightByKey.keys).union($0.failures.keys) }
            .map { ImagePipeline.cacheKey(ofFlight: $0) }
        var states: [String: DownloadState] = [:]
        for key in Set(keys).union(memory.keys) {
            states[key] = state(forKey: key)
        }
        return states
    }

    /// The image in memory for `key`, counted as a memory hit, or `nil`.
    public nonisolated func cachedImage(forKey key: String) -> Image? {
        memory.image(forKey: key)
    }

    /// The number of memory hits so far, then each new count: the book's `inMemoryAccess`.
    /// Every call returns a new stream; any number may be followed at once.
    public nonisolated var inMemoryAccess: AsyncStream<Int> { memory.hits.stream() }

    /// What each stage runs and queues now, with its high-water marks, refusals and time-outs.
    public nonisolated var schedulingStats: SchedulingStats { pipeline.schedulingStats }

    /// The scheduling counts now, then after each change; see
    /// ``ImagePipeline/onSchedulingChange``.
    public nonisolated var onSchedulingChange: AsyncStream<SchedulingStats> { pipeline.onSchedulingChange }
}
