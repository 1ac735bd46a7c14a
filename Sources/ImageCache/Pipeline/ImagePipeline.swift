import Clocks
import Foundation
import Logging
import Synchronization

/// The one owner of every stage an image goes through. ``ImageLoader`` (the book's actor: memory
/// and single flight) and ``ImageDatabase`` (the book's global actor: plus the disk) are faces
/// over one pipeline each; neither calls the other.
///
/// The path of one request, top to bottom in this file:
///
/// ```
/// image(for:)
///   1. memory          MemoryCache, behind a mutex: a hit costs no task and no hop
///   2. flight          one per cache key (FlightStateMachine): the first caller leads it, later
///                      callers join it and wait; a remembered failure answers at once
///   lead(_:flight:)    the leader, in its own task:
///   3. disk            read and checked (length, key, XXH3); a hit finishes the flight inline
///   run(_:flight:)     on a miss, work in a task that outlives the leader, shared by all waiters:
///   4. origin          the fetcher; the feed's SHA-256 checked once, on arrival
///   5. process         a variant is made from its original, which is itself a request through
///                      1-6: fetched once, and read from disk once, however many variants ask
///   6. store           disk (temp file + rename), then memory as the flight completes
/// ```
///
/// Coalescing happens at each stage that costs something, because each is inside a flight: the
/// original's disk read and download (the original's key), each variant's disk read and
/// processing (the variant's key).
///
/// Thread-safe, and not an actor: its state is the memory tier and the flight table, each
/// behind a `Mutex` held only for bookkeeping. Disk I/O, fetching and processing run in the
/// calling task (the leader's disk read) or in the flight's task, never under a lock.
final class ImagePipeline: Sendable {
    typealias Flights = FlightStateMachine<
        CheckedContinuation<Image?, any Swift.Error>, Task<Image, any Swift.Error>,
        ImageLoader.Error, AnyClock<Duration>.Instant
    >

    let configuration: ImageLoader.Configuration
    let fetcher: any ImageFetching
    let clock: AnyClock<Duration>
    let logger: Logger
    /// Stage 1.
    let memory: MemoryCache
    /// Stage 2.
    let flights = Mutex(Flights())
    /// Stages 3 and 6; `nil` for a memory-only loader.
    let disk: DiskStorage?
    /// The one set-up of the disk, awaited by every first caller.
    private let setUpTask = Mutex<Task<Result<DiskStorage.SetUpReport, ImageLoader.Error>, Never>?>(nil)
    /// The disk once set up and usable; read on every miss, so a mutex rather than a hop.
    private let readyDisk = Mutex<DiskStorage?>(nil)

    let counters = Counters()

    /// The pipeline's live counts.
    struct Counters: Sendable {
        let diskHits = LiveCounter()
        let originFetches = LiveCounter()
        let coalesced = LiveCounter()
        let failures = LiveCounter()
        let corruptEntries = LiveCounter()
        let diskFailures = LiveCounter()
    }

    init(
        configuration: ImageLoader.Configuration, disk: DiskStorage?, fetcher: any ImageFetching,
        clock: AnyClock<Duration>, logger: Logger
    ) {
        self.configuration = configuration
        self.disk = disk
        self.fetcher = fetcher
        self.clock = clock
        self.logger = logger
        memory = MemoryCache(costLimit: configuration.memoryCostLimit, countLimit: configuration.memoryCountLimit)
    }

    // MARK: - The path of one image

    /// Loads `request`: memory, the running flight, disk, origin or processing, store.
    func image(for request: ImageRequest) async throws -> Image {
        let key = request.cacheKey
        // 1. Memory.
        if let image = memory.image(forKey: key) { return image }
        var retrying = request.retryingFailures
        while true {
            // 2. The flight of this key. No suspension point between the memory miss and here:
            //    the flight is registered before any other caller can run.
            let step = flights.withLock { $0.begin(key, now: clock.now, retrying: retrying) }
            retrying = false  // a failure recorded from now on is this request's own answer
            let result: Image?
            switch step {
            case let .fail(error):
                throw error
            case let .join(id):
                result = try await wait(key, flight: id, joining: true)
            case let .lead(id):
                result = try await lead(request, flight: id)
            }
            if let result { return result }
            // The flight ended before this caller was added: its image is in memory, its failure
            // is remembered, or (cancelled, or too big for memory) the next flight starts.
            if let image = memory.image(forKey: key) { return image }
        }
    }

    /// The leader's part: the disk in its own task, then, on a miss, hand the rest to work that
    /// every waiter shares. Returns `nil` when the flight ended before the leader could wait.
    private func lead(_ request: ImageRequest, flight id: Flights.FlightID) async throws -> Image? {
        let key = request.cacheKey
        // 3. Disk: read and checked right here; a hit needs no task and no hop.
        if let disk = await usableDisk(), let image = read(key, from: disk) {
            complete(key, flight: id, with: .success(image))
            return image
        }
        // 4-6. Origin or processing, then store, in work that outlives the leader.
        let started = flights.withLock { flights in
            flights.handOff(key, flight: id, leaderCancelled: Task.isCancelled) {
                Task { try await self.run(request, flight: id) }
            }
        }
        guard started else { throw CancellationError() }
        return try await wait(key, flight: id, joining: false)
    }

    /// The flight's work: the origin or the processor, then the disk. Completes the flight.
    private func run(_ request: ImageRequest, flight id: Flights.FlightID) async throws -> Image {
        let result: Result<Image, any Swift.Error>
        do {
            let image: Image
            if let processor = request.processor {
                // 5. A variant, from its original (stages 1-6 for the original's own key).
                let original = try await self.image(for: request.original)
                image = try await Self.process(original, with: processor)
            } else {
                // 4. The origin; bytes that do not match the feed are never cached.
                counters.originFetches.increment()
                image = try Self.verified(await fetcher.fetch(request), request: request)
            }
            // 6. Store on disk; memory is filled when the flight completes.
            if let disk = readyDisk.withLock({ $0 }) { write(image, forKey: request.cacheKey, to: disk) }
            result = .success(image)
        } catch {
            result = .failure(error)
        }
        complete(request.cacheKey, flight: id, with: result)
        return try result.get()
    }

    /// Ends the flight: keeps a success in memory, remembers a failure until its expiry, and
    /// resumes every waiter.
    private func complete(_ key: String, flight id: Flights.FlightID, with result: Result<Image, any Swift.Error>) {
        var remembered: (ImageLoader.Error, until: AnyClock<Duration>.Instant)?
        switch result {
        case let .success(image):
            memory.insert(image, forKey: key)
        case let .failure(error as ImageLoader.Error):
            let expiry = error.isTransient ? configuration.transientFailureExpiry : configuration.permanentFailureExpiry
            remembered = (error, clock.now.advanced(by: expiry))
        case .failure:
            break  // cancellation, or an error of a custom fetcher: not remembered
        }
        guard let waiters = flights.withLock({ $0.finish(key, flight: id, remembering: remembered) }) else { return }
        if remembered != nil { counters.failures.increment() }
        let answer = result.map { Optional($0) }
        for waiter in waiters { waiter.resume(with: answer) }
    }

    /// Waits for flight `id` of `key` as one of its waiters. Cancelling the calling task returns
    /// at once with `CancellationError`; the last waiter to cancel cancels the work.
    /// - Parameter joining: a caller other than the leader, counted as coalesced once it waits.
    /// - Returns: `nil` when the flight ended before this waiter was added.
    private func wait(_ key: String, flight id: Flights.FlightID, joining: Bool) async throws -> Image? {
        let waiterID = flights.withLock { $0.makeID() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Image?, any Swift.Error>) in
                switch flights.withLock({ $0.addWaiter(continuation, id: waiterID, to: key, flight: id) }) {
                case .waiting:
                    if joining { counters.coalesced.increment() }
                case .ended:
                    continuation.resume(returning: nil)
                case let .cancelled(work):
                    work?.cancel()
                    continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            switch flights.withLock({ $0.cancel(waiterID, of: key, flight: id) }) {
            case .none:
                break
            case let .resume(waiter):
                waiter.resume(throwing: CancellationError())
            case let .resumeAndCancelWork(waiter, work):
                waiter.resume(throwing: CancellationError())
                work?.cancel()
            }
        }
    }

    // MARK: - Verify and process

    /// Checks fetched bytes against the request's expected SHA-256 (the feed's checksum).
    static func verified(_ image: Image, request: ImageRequest) throws(ImageLoader.Error) -> Image {
        guard let expected = request.expectedSHA256 else { return image }
        let actual = SHA256Hex.digest(image.data)
        guard actual == expected else {
            throw .checksumMismatch(expected: expected, actual: actual, url: request.url.absoluteString)
        }
        return image
    }

    /// Runs a processor, wrapping its errors.
    static func process(_ image: Image, with processor: any ImageProcessing) async throws -> Image {
        do {
            return try await processor.process(image)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ImageLoader.Error.processingFailed(processor: processor.identifier, reason: "\(error)")
        }
    }

    // MARK: - The disk

    /// Sets the disk up once: every caller, first or not, awaits the same set-up.
    func setUp() async -> Result<DiskStorage.SetUpReport, ImageLoader.Error> {
        guard let disk else {
            return .failure(.diskFailure(path: "(none)", reason: "this loader has no disk tier: use ImageDatabase"))
        }
        let task = setUpTask.withLock { task in
            if let task { return task }
            let started = Task { self.runSetUp(disk) }
            task = started
            return started
        }
        return await task.value
    }

    private func runSetUp(_ disk: DiskStorage) -> Result<DiskStorage.SetUpReport, ImageLoader.Error> {
        let result = Result { () throws(ImageLoader.Error) in try disk.setUp() }
        switch result {
        case let .success(report):
            readyDisk.withLock { $0 = disk }
            logger.debug("disk cache ready", metadata: [
                "directory": "\(disk.directory.path)", "entries": "\(report.entries)", "bytes": "\(report.bytes)",
            ])
        case let .failure(error):
            counters.diskFailures.increment()
            logger.error("disk cache unavailable, using memory and network only: \(error)")
        }
        return result
    }

    /// The disk once set up (setting it up on first use), or `nil` when there is none or it
    /// failed.
    func usableDisk() async -> DiskStorage? {
        if let ready = readyDisk.withLock({ $0 }) { return ready }
        guard disk != nil, case .success = await setUp() else { return nil }
        return readyDisk.withLock { $0 }
    }

    /// Whether the disk tier is set up and usable.
    var isDiskAvailable: Bool { readyDisk.withLock { $0 != nil } }

    /// Reads `key`'s entry: a damaged one is deleted, counted and answered as a miss.
    private func read(_ key: String, from disk: DiskStorage) -> Image? {
        do {
            guard let image = try disk.read(forKey: key) else { return nil }
            counters.diskHits.increment()
            return image
        } catch {
            if case .corruptEntry = error { counters.corruptEntries.increment() } else { counters.diskFailures.increment() }
            logger.warning("\(error)")
            return nil
        }
    }

    /// Writes `key`'s entry; a failure (full disk, vanished directory) is counted and logged, and
    /// the image is still answered.
    func write(_ image: Image, forKey key: String, to disk: DiskStorage) {
        do {
            try disk.write(image, forKey: key)
        } catch {
            counters.diskFailures.increment()
            logger.error("\(error)")
        }
    }

    // MARK: - Clearing

    /// Empties memory and forgets remembered failures; running flights go on.
    func clearMemory() {
        memory.removeAll()
        flights.withLock { $0.forgetFailures() }
    }
}
