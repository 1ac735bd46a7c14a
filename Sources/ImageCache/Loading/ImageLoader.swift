import Clocks
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Loads images and keeps them in memory: the book's `ImageLoader` actor and the article's
/// `fetch(_:)` entry points, made bounded, failure-aware and cancellable.
///
/// Isolation: an actor. It guards the download states only; fetching, hashing, processing and
/// disk I/O run in the download task, off the actor's executor.
///
/// - Concurrent requests for one key share one download (registered before the first
///   suspension point, so no caller can slip in between).
/// - Completed images live in a memory cache bounded by total bytes and count, least recently
///   used out first; an image bigger than a tenth of the byte limit is returned but not kept.
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

    /// Limits and expiries.
    public struct Configuration: Sendable {
        /// Base URL that ``image(_:)`` resolves server paths against, as in the book.
        public var baseURL: URL?
        /// The variant ``image(_:)``, ``fetch(_:)-(URL)`` and ``fetch(_:)-(URLRequest)`` produce;
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

        /// Creates a configuration.
        public init(
            baseURL: URL? = nil,
            processor: (any ImageProcessing)? = nil,
            memoryCostLimit: Int = 64 * 1024 * 1024,
            memoryCountLimit: Int = 1000,
            permanentFailureExpiry: Duration = .seconds(300),
            transientFailureExpiry: Duration = .seconds(5)
        ) {
            self.baseURL = baseURL
            self.processor = processor
            self.memoryCostLimit = memoryCostLimit
            self.memoryCountLimit = memoryCountLimit
            self.permanentFailureExpiry = permanentFailureExpiry
            self.transientFailureExpiry = transientFailureExpiry
        }
    }

    /// One download and the callers waiting for it.
    struct Flight {
        let id: UInt64
        let task: Task<Image, any Swift.Error>
        var waiters: [UInt64: CheckedContinuation<Image, any Swift.Error>] = [:]
    }

    /// The configuration this loader was made with.
    public nonisolated let configuration: Configuration
    /// Where originals come from.
    public nonisolated let fetcher: any ImageFetching
    nonisolated let clock: AnyClock<Duration>

    /// The memory tier, readable without hopping onto this actor.
    public nonisolated let memory: MemoryCache
    private var flights: [String: Flight] = [:]
    private var failures: [String: (error: Error, until: AnyClock<Duration>.Instant)] = [:]
    private var nextID: UInt64 = 0

    nonisolated let coalescedCounter = LiveCounter()
    nonisolated let failureCounter = LiveCounter()

    /// Creates a loader.
    /// - Parameters:
    ///   - fetcher: where originals come from; HTTP by default.
    ///   - clock: the clock failure expiries are measured on; tests pass a `TestClock`.
    public init(
        configuration: Configuration = .init(),
        fetcher: any ImageFetching = HTTPImageFetcher(),
        clock: some Clock<Duration> = ContinuousClock()
    ) {
        self.configuration = configuration
        self.fetcher = fetcher
        self.clock = AnyClock(clock)
        memory = MemoryCache(costLimit: configuration.memoryCostLimit, countLimit: configuration.memoryCountLimit)
    }

    // MARK: - The book's and the article's entry points

    /// Loads the image at `serverPath`, relative to ``Configuration/baseURL``, as the
    /// configured variant.
    public func image(_ serverPath: String) async throws -> Image {
        try await image(for: ImageRequest(url: resolve(serverPath), processor: configuration.processor))
    }

    /// Loads the image at `url` as the configured variant (the article's `fetch(_ url:)`).
    public func fetch(_ url: URL) async throws -> Image {
        try await image(for: ImageRequest(url: url, processor: configuration.processor))
    }

    /// Loads the image of `urlRequest` (URL and headers) as the configured variant (the
    /// article's `fetch(_ urlRequest:)`).
    public func fetch(_ urlRequest: URLRequest) async throws -> Image {
        var request = try ImageRequest(urlRequest)
        request.processor = configuration.processor
        return try await image(for: request)
    }

    /// Loads `request` from memory, a running download, or the origin; a variant is made from
    /// the original, which is fetched once however many variants ask for it.
    public func image(for request: ImageRequest) async throws -> Image {
        try await image(forKey: request.cacheKey, retryingFailures: request.retryingFailures) { [fetcher] in
            if let processor = request.processor {
                let original = try await self.image(for: request.original)
                return try await Self.process(original, with: processor)
            }
            return try await Self.verified(fetcher.fetch(request), request: request)
        }
    }

    /// Puts `image` in the memory cache under `key` (the book's `add(_:forKey:)`).
    public func add(_ image: Image, forKey key: String) {
        failures[key] = nil
        memory.insert(image, forKey: key)
    }

    /// Empties the memory cache and forgets remembered failures (running downloads go on).
    public func clear() {
        memory.removeAll()
        failures.removeAll()
    }

    /// Forgets the failure remembered for `key`, so the next request tries again.
    public func forgetFailure(forKey key: String) {
        failures[key] = nil
    }

    /// The state of `key`: in progress, completed (in memory) or failed (not yet expired).
    public func state(forKey key: String) -> DownloadState? {
        if let flight = flights[key] { return .inProgress(flight.task) }
        if let image = memory.peek(key) { return .completed(image) }
        if let failure = failures[key], clock.now < failure.until { return .failed(failure.error, until: failure.until) }
        return nil
    }

    /// How many callers are waiting for the download of `key` (0 when none is running).
    public func waiterCount(forKey key: String) -> Int {
        flights[key]?.waiters.count ?? 0
    }

    /// Every key's state, as the book's `cache` dictionary.
    public var cache: [String: DownloadState] {
        var states: [String: DownloadState] = [:]
        for key in Set(flights.keys).union(memory.keys).union(failures.keys) {
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

    // MARK: - Single flight

    /// The one lookup path: memory, remembered failure, running download, then `load` in a new
    /// download that every concurrent caller for `key` shares.
    ///
    /// `load` runs in an unstructured task, off this actor; its result is kept in memory
    /// (success) or remembered until its expiry (failure other than cancellation).
    public func image(
        forKey key: String,
        retryingFailures: Bool = false,
        load: @escaping @Sendable () async throws -> Image
    ) async throws -> Image {
        // No suspension point from here until the flight is registered.
        if let image = memory.image(forKey: key) { return image }
        if let failure = failures[key] {
            if retryingFailures || clock.now >= failure.until {
                failures[key] = nil
            } else {
                throw failure.error
            }
        }
        let flightID: UInt64
        if let flight = flights[key] {
            flightID = flight.id
            coalescedCounter.increment()
        } else {
            flightID = makeID()
            let task = Task<Image, any Swift.Error> {
                let result = await Self.run(load)
                await self.finish(key, flightID: flightID, result)
                return try result.get()
            }
            flights[key] = Flight(id: flightID, task: task)
        }
        return try await wait(forKey: key, flightID: flightID)
    }

    private func wait(forKey key: String, flightID: UInt64) async throws -> Image {
        let waiterID = makeID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Image, any Swift.Error>) in
                // Runs synchronously on this actor: the flight registered above is still here.
                if Task.isCancelled || flights[key]?.id != flightID {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                flights[key]?.waiters[waiterID] = continuation
            }
        } onCancel: {
            Task { await self.cancelWaiter(waiterID, key: key, flightID: flightID) }
        }
    }

    private func cancelWaiter(_ waiterID: UInt64, key: String, flightID: UInt64) {
        guard var flight = flights[key], flight.id == flightID,
              let continuation = flight.waiters.removeValue(forKey: waiterID)
        else { return }
        continuation.resume(throwing: CancellationError())
        if flight.waiters.isEmpty {
            flight.task.cancel()
            flights[key] = nil
        } else {
            flights[key] = flight
        }
    }

    private func finish(_ key: String, flightID: UInt64, _ result: Result<Image, any Swift.Error>) {
        guard let flight = flights[key], flight.id == flightID else { return }  // cancelled by its last waiter
        flights[key] = nil
        switch result {
        case let .success(image):
            memory.insert(image, forKey: key)
        case let .failure(error):
            if let error = error as? Error {
                let expiry = error.isTransient ? configuration.transientFailureExpiry : configuration.permanentFailureExpiry
                failures[key] = (error, clock.now.advanced(by: expiry))
                failureCounter.increment()
            }
        }
        for continuation in flight.waiters.values { continuation.resume(with: result) }
    }

    private func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// Resolves a server path against the base URL; an absolute URL stays as it is.
    nonisolated func resolve(_ serverPath: String) throws(Error) -> URL {
        if let absolute = URL(string: serverPath), absolute.scheme != nil { return absolute }
        guard let base = configuration.baseURL, let url = URL(string: serverPath, relativeTo: base)?.absoluteURL else {
            throw .invalidURL(serverPath)
        }
        return url
    }

    // MARK: - Work done off the actor

    private nonisolated static func run(_ load: @Sendable () async throws -> Image) async -> Result<Image, any Swift.Error> {
        do { return .success(try await load()) } catch { return .failure(error) }
    }

    /// Checks the fetched bytes against the request's expected SHA-256.
    nonisolated static func verified(_ image: Image, request: ImageRequest) throws -> Image {
        guard let expected = request.expectedSHA256 else { return image }
        let actual = SHA256Hex.digest(image.data)
        guard actual == expected else {
            throw Error.checksumMismatch(expected: expected, actual: actual, url: request.url.absoluteString)
        }
        return image
    }

    /// Runs a processor, wrapping its errors.
    nonisolated static func process(_ image: Image, with processor: any ImageProcessing) async throws -> Image {
        do {
            return try await processor.process(image)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Error.processingFailed(processor: processor.identifier, reason: "\(error)")
        }
    }
}
