import Clocks
public import Foundation
import HTTPCaching
public import Logging
import Synchronization

/// The engine: the one owner of every stage an image goes through, in Nuke's shape. Use it
/// directly, or through the book's faces: ``ImageLoader`` (the book's actor) and
/// ``ImageDatabase`` (the book's global actor, with a disk) are faces over one pipeline each,
/// keep the book's and the article's names, and neither calls the other.
///
/// ```swift
/// let pipeline = ImagePipeline(disk: DiskStorage(directory: cacheDirectory))
/// let image = try await pipeline.image(for: ImageRequest(url: url))
/// ```
///
/// The path of one request, top to bottom in this file (the origin and the variant, stages 4 and
/// 5, in `ImagePipeline+Origin.swift`):
///
/// ```
/// image(for:)
///   1. memory          MemoryCache, behind a mutex: a hit costs no task and no hop
///   2. flight          one per cache key (PipelineStateMachine): the first caller leads it,
///                      later callers join it and wait; a remembered failure answers at once
///   lead(_:flight:member:stale:caller:)
///                      the leader, in the caller's own task (no new task, no hop):
///   3. disk            [disk-read slot] read and checked (length, key, XXH3); a usable hit
///                      finishes the flight
///   run(_:flight:stale:knownMissing:diskChecked:as:)
///                      on a miss or a stale entry, work in a task that outlives the leader,
///                      shared by all waiters:
///   4. origin          [download slot, per host too] the fetcher, conditional on the stale
///                      entry's validators (a 304 keeps its bytes); the feed's SHA-256 checked
///                      once, on arrival
///   5. process         a variant is made from its original, which is itself a request through
///                      1-6: fetched once, and read from disk once, however many variants ask;
///                      [processing slot] the processor runs on the worker threads
///   6. store           [disk-write slot] disk (temp file, fsync, rename) on the I/O threads,
///                      then memory as the flight completes
/// ```
///
/// Freshness (`lookup(_:for:)`): an entry found in memory or on disk is answered, answered with
/// a refresh in the background (`stale-while-revalidate`), revalidated, or ignored, by the
/// request's ``CachePolicy`` and RFC 9111 against the injected wall clock `now`. A stale entry
/// is answered when the origin cannot be reached or fails inside `stale-if-error`. A variant
/// carries its original's headers and SHA-256: it goes stale with it, and one made from other
/// bytes than the original has now is never answered.
///
/// Coalescing happens at each stage that costs something, because each is inside a flight: the
/// original's disk read and download (the original's key), each variant's disk read and
/// processing (the variant's key).
///
/// Each [slot] is a stage of the bookkeeping (`ImagePipeline+Scheduling.swift`): work waits in
/// that stage's queue, highest priority first, while the stage is at its limit (see
/// ``ImagePipeline/Limits``); a flight runs at the highest priority of its members (callers, and
/// the flights of variants waiting for an original).
///
/// Thread-safe (`Sendable`), and not an actor: its state is the memory tier and the bookkeeping
/// (flights, priorities, stage queues: one `PipelineStateMachine`), each behind a `Mutex` held
/// only for bookkeeping, so no call hops onto an executor. The leader's disk read runs in the
/// calling task, fetching in the flight's task, processing and disk writes on the pipeline's own
/// threads; never under a lock.
public final class ImagePipeline: Sendable {
    /// What the bookkeeping holds: continuations, tasks, failures, instants.
    enum Handles: PipelineHandles {
        typealias Waiter = CheckedContinuation<Image?, any Swift.Error>
        typealias SlotWaiter = CheckedContinuation<Void, any Swift.Error>
        typealias Work = Task<Image, any Swift.Error>
        typealias Deadline = Task<Void, Never>
        typealias Failure = RememberedFailure
        typealias Instant = AnyClock<Duration>.Instant
    }

    /// A failure remembered with the SHA-256 the request that met it expected (the feed's
    /// checksum then): a failure about the bytes (a mismatch, a 404, an undecodable image) does
    /// not answer a request that expects other bytes (a later edition of the feed).
    struct RememberedFailure: Swift.Error, Equatable, Sendable {
        let error: ImagePipeline.Error
        let expectedSHA256: String?
    }

    typealias Machine = PipelineStateMachine<Handles>
    typealias FlightID = Machine.FlightID

    /// The limits, expiries and variant this pipeline was made with.
    public let configuration: Configuration
    /// Where originals come from.
    public let fetcher: any ImageFetching
    /// Measures failure expiries.
    let clock: AnyClock<Duration>
    /// Tells the date: freshness is wall-clock time, kept across restarts.
    let now: @Sendable () -> Date
    let logger: Logger
    /// Stage 1: the memory tier, readable from anywhere without a hop.
    public let memory: MemoryCache
    /// Stage 2 and every limited stage: the flights, their members and priorities, and the
    /// stages' slots and queues, in one machine behind one lock.
    let bookkeeping: Mutex<Machine>
    /// Stages 3 and 6: the disk tier; `nil` for a memory-only pipeline.
    public let disk: DiskStorage?
    /// The one set-up of the disk, awaited by every first caller.
    let setUpTask = Mutex<Task<Result<DiskStorage.SetUpReport, ImagePipeline.Error>, Never>?>(nil)
    /// Whether ``disk`` is set up and usable; read on every miss, so an atomic flag rather than
    /// a lock or a hop.
    let diskIsReady = Atomic<Bool>(false)

    let counters = Counters()
    /// Bumped after every change of the bookkeeping (see ``changeStream()``): with nobody
    /// following, one atomic add.
    let changes = LiveCounter()
    /// Where processors run: never on Swift's cooperative threads.
    let processingPool: WorkerPool
    /// Where disk writes (and their `fsync`) run.
    let ioPool: WorkerPool

    /// The pipeline's live counts.
    struct Counters: Sendable {
        let diskHits = LiveCounter()
        let originFetches = LiveCounter()
        let coalesced = LiveCounter()
        let failures = LiveCounter()
        let corruptEntries = LiveCounter()
        let diskFailures = LiveCounter()
        /// Conditional requests answered 304.
        let revalidations = LiveCounter()
        /// Conditional requests answered with new bytes.
        let refreshed = LiveCounter()
        /// Stale entries answered (stale-while-revalidate, or the origin failing).
        let staleAnswers = LiveCounter()
        /// Origin answers with a body (2xx).
        let downloads = LiveCounter()
        /// Origin answers 404 or 410.
        let missingAnswers = LiveCounter()
        /// Other origin answers that gave no image (another status, a body over the limit).
        let errorAnswers = LiveCounter()
        /// Origin requests that got no answer (refused, timed out, broken, cancelled).
        let unanswered = LiveCounter()
        /// Lookups answered "missing" by a stored 404 or 410, without asking the origin.
        let knownMissing = LiveCounter()
    }

    /// Creates a pipeline.
    /// - Parameters:
    ///   - configuration: limits, expiries and the variant the book's entry points make.
    ///   - disk: the disk tier, set up on first use (or by ``setUp()``); `nil` for memory and
    ///     network only.
    ///   - fetcher: where originals come from; HTTP by default.
    ///   - clock: the clock failure expiries and queue deadlines run on; tests pass a clock they
    ///     move by hand.
    ///   - now: the wall clock HTTP freshness is judged by. Freshness must survive restarts, so
    ///     it is the date, not a duration clock; tests pass one they move.
    ///   - logger: where the pipeline logs damaged entries, disk failures, stale answers and each
    ///     failed load (once per failure remembered, with its key; a 404 at `.debug`).
    public init(
        configuration: Configuration = .init(),
        disk: DiskStorage? = nil,
        fetcher: any ImageFetching = HTTPImageFetcher(),
        clock: some Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger(label: "ImageCache.ImagePipeline")
    ) {
        self.configuration = configuration
        self.disk = disk
        self.fetcher = fetcher
        self.clock = (clock as? AnyClock<Duration>) ?? AnyClock(clock)
        self.now = now
        self.logger = logger
        memory = MemoryCache(costLimit: configuration.memoryCostLimit, countLimit: configuration.memoryCountLimit)
        let limits = configuration.limits
        bookkeeping = Mutex(Machine(limits: .init(
            running: [
                .diskRead: limits.diskReads, .download: limits.downloads, .processing: limits.processing,
                .diskWrite: limits.diskWrites,
            ],
            downloadsPerHost: limits.downloadsPerHost, waitingOriginalBytes: limits.waitingOriginalBytes,
            queueCapacity: limits.queueCapacity
        )))
        processingPool = WorkerPool(name: "processing", threads: configuration.limits.processing)
        ioPool = WorkerPool(name: "io", threads: configuration.limits.diskWrites)
    }

    /// Who asks for an image: where its priority comes from, and what answering it counts as.
    struct Caller: Sendable {
        /// An ``ImageTask``, a fixed priority, or a variant's flight.
        var asker: Machine.Asker
        /// Whether a hit answered to it counts (a prefetch's does not).
        var countsHits = true
        /// Whether its result is kept in memory (a prefetch to disk's is not).
        var wantsMemory = true
    }

    // MARK: - The path of one image

    /// Loads `request`: memory, the running flight, disk, origin or processing, store (see
    /// <doc:RequestFlow>). A memory hit is answered without suspending.
    ///
    /// A variant (a request with a processor) is made from the original, which goes through the
    /// same path, so it is fetched once for all variants.
    /// - Throws: ``Error`` (a remembered failure answers at once until its expiry);
    ///   `CancellationError` when the calling task is cancelled.
    public func image(for request: ImageRequest) async throws -> Image {
        // Stage 1 before any call that may suspend: a memory hit costs no further async call.
        switch memoryLookup(request) {
        case let .answered(image): return image
        case let .notAnswered(stale, fills): return try await load(request, stale: stale, fills: fills)
        }
    }

    /// Starts loading `request` and returns its handle, to change its priority or cancel it.
    public func imageTask(with request: ImageRequest) -> ImageTask {
        ImageTask(request: request, pipeline: self, countsHits: true, wantsMemory: true)
    }

    /// Loads `request` for `caller`: memory, the running flight, disk, origin or processing, store.
    /// - Parameter caller: who asks; `nil` for a caller at the request's priority.
    func image(for request: ImageRequest, as caller: Caller?) async throws -> Image {
        switch memoryLookup(request, countingHit: caller?.countsHits ?? true) {
        case let .answered(image): image
        case let .notAnswered(stale, fills): try await load(request, stale: stale, fills: fills, as: caller)
        }
    }

    /// What stage 1 found.
    enum MemoryAnswer {
        /// A usable entry, counted as a hit.
        case answered(Image)
        /// Nothing usable: `stale` is an entry to revalidate, if any; `fills` is
        /// ``MemoryCache/fills`` as it was before the lookup.
        case notAnswered(stale: Image?, fills: UInt64)
    }

    /// Stage 1, synchronous: a memory hit costs no task, no hop and no suspension. Faces call
    /// it before they await anything.
    func memoryLookup(_ request: ImageRequest, countingHit: Bool = true) -> MemoryAnswer {
        let fills = memory.fills
        // One lock: the entry and, for a variant, what this process knows of its original.
        guard request.cachePolicy != .reloadIgnoringCacheData,
              case let (entry?, original) = memory.touch(request.cacheKey, original: request.processor == nil ? nil : request.originalCacheKey)
        else {
            return .notAnswered(stale: nil, fills: fills)
        }
        switch lookup(entry, for: request, knownOriginal: .some(original)) {
        case .answer:
            if countingHit { memory.hits.increment() }
            return .answered(entry)
        case .answerAndRefresh:
            if countingHit { memory.hits.increment() }
            answeredStale(entry, for: request, refreshing: true)
            return .answered(entry)
        case .revalidate:
            return .notAnswered(stale: entry, fills: fills)
        case .miss:
            return .notAnswered(stale: nil, fills: fills)
        }
    }

    /// Stages 2-6, after memory could not answer: the flight of the key, led or joined.
    /// - Parameters:
    ///   - stale: the entry memory found to revalidate, if any.
    ///   - fills: ``MemoryCache/fills`` as it was before memory was looked in.
    ///   - caller: who asks; by default a caller at the request's priority.
    func load(_ request: ImageRequest, stale: Image?, fills: UInt64, as caller: Caller? = nil) async throws -> Image {
        let caller = caller ?? Caller(asker: .fixed(request.priority))
        let key = request.cacheKey
        let flightKey = Self.flightKey(request)
        var retrying = request.retryingFailures
        var fills = fills
        while true {
            // 2. The flight of this key, led or joined; either way the caller is its member from
            //    now on, and the flight runs at least at its priority.
            let step = bookkeeping.withLock { machine in
                let now = clock.now
                // A failure about bytes remembered for another expected digest (the feed has listed
                // a new edition of the image since) is not this request's answer: it loads again.
                let anotherEdition = Self.isForAnotherEdition(machine.failure(flightKey, now: now)?.failure, request)
                return machine.begin(
                    flightKey, asker: caller.asker, wantsMemory: caller.wantsMemory, now: now, retrying: retrying || anotherEdition
                )
            }
            retrying = false  // a failure recorded from now on is this request's own answer
            let result: Image?
            switch step {
            case let .fail(remembered):
                throw remembered.error
            case let .join(id, member):
                changed()  // the flight's priority may have risen
                result = try await wait(flight: id, member: member, joining: caller.countsHits)
            case let .lead(id, member):
                // The flight this caller missed in memory may have ended between the look and
                // this `begin`: its image is in memory now, and reading the disk again would be
                // work done twice. Such a flight put its image in memory before it ended, so
                // memory is looked in again only if it gained something since the caller looked
                // (an image, or an original's digest: `MemoryCache.fills`; on a cold path nothing
                // did, so one look per key).
                if stale == nil, memory.fills != fills,
                   case let .answered(image) = memoryLookup(request, countingHit: caller.countsHits) {
                    complete(request, flight: id, with: .success(image), keepingInMemory: false)
                    return image
                }
                result = try await lead(request, flight: id, member: member, stale: stale, caller: caller)
            }
            if let result { return result }
            // The flight ended before this caller was added: its image is in memory, its failure
            // is remembered, or (cancelled, or too big for memory) the next flight starts.
            fills = memory.fills
            if let image = caller.countsHits ? memory.image(forKey: key) : memory.peek(key) { return image }
        }
    }

    /// Requests share a flight when they may share an answer: a reload, or a revalidation of
    /// what may be fresh, never joins a plain lookup that a disk hit can answer.
    static func flightKey(_ request: ImageRequest) -> String {
        switch request.cachePolicy {
        case .reloadIgnoringCacheData: request.cacheKey + flightSuffixes[0]
        case .reloadRevalidatingCacheData: request.cacheKey + flightSuffixes[1]
        default: request.cacheKey
        }
    }

    /// What a reload's and a revalidation's flight keys add to the cache key.
    static let flightSuffixes = ["\u{0}reload", "\u{0}revalidate"]

    /// The cache key a flight key belongs to (see ``flightKey(_:)``).
    static func cacheKey(ofFlight flightKey: String) -> String {
        flightKey.firstIndex(of: "\u{0}").map { String(flightKey[..<$0]) } ?? flightKey
    }

    /// The leader's part: the disk in its own task, then, on a miss, hand the rest to work that
    /// every member shares. Returns `nil` when the flight ended before the leader could wait.
    private func lead(
        _ request: ImageRequest, flight id: FlightID, member: Machine.MemberID, stale: Image?, caller: Caller
    ) async throws -> Image? {
        var stale = stale
        // A stale known-missing entry: answered if the origin cannot be reached.
        var missing: Int?
        // 3. Disk: read and checked right here, within the disk-read limit; a hit needs no task
        //    and no hop.
        var diskChecked = stale != nil
        if stale == nil {
            let found: DiskLookup
            do {
                found = try await diskLookup(request, flight: id)
            } catch is CancellationError {
                found = .notRead  // the leader left while it waited; the work reads it, if wanted
            } catch {
                complete(request, flight: id, with: .failure(error))
                throw error
            }
            switch found {
            case let .answer(entry, refreshing):
                if caller.countsHits { counters.diskHits.increment() }
                if refreshing { answeredStale(entry, for: request, refreshing: true) }
                complete(request, flight: id, with: .success(entry), leaderWantsMemory: caller.wantsMemory)
                return entry
            case let .revalidate(entry):
                stale = entry
                diskChecked = true
            case let .missing(status):
                let error = knownMissing(status, request: request)
                complete(request, flight: id, with: .failure(error))
                throw error
            case let .missingStale(status):
                missing = status
                diskChecked = true
            case .miss:
                diskChecked = true
            case .notRead:
                break
            }
        }
        // Offline, an original that is not cached cannot be had; a variant still can, from a
        // cached original.
        guard request.cachePolicy.allowsLoading || request.processor != nil else {
            let error = missing.map { knownMissing($0, request: request) } ?? ImagePipeline.Error.notCached(url: request.url.absoluteString)
            complete(request, flight: id, with: .failure(error))
            throw error
        }
        // 4-6. Origin or processing, then store, in work that outlives the leader and runs at
        //      the priority of every member, the leader included.
        let (revalidating, checked, missingStatus) = (stale, diskChecked, missing)
        let work = Caller(asker: .flight(id), countsHits: caller.countsHits, wantsMemory: caller.wantsMemory)
        let started = bookkeeping.withLock { machine in
            machine.handOff(id, leader: member, leaderCancelled: Task.isCancelled) {
                Task {
                    try await self.run(
                        request, flight: id, stale: revalidating, knownMissing: missingStatus, diskChecked: checked, as: work
                    )
                }
            }
        }
        guard started else { throw CancellationError() }
        return try await wait(flight: id, member: member, joining: false)
    }

    /// The flight's work: the origin or the processor, then the disk. Completes the flight.
    /// - Parameter stale: the entry being revalidated, if any: answered on a 304, or when the
    ///   origin fails and its headers allow a stale answer.
    /// - Parameter knownMissing: the status of a stale known-missing entry, answered when the
    ///   origin cannot be reached.
    /// - Parameter diskChecked: false when the leader left before it read the disk: the work
    ///   reads it first.
    private func run(
        _ request: ImageRequest, flight id: FlightID, stale: Image?, knownMissing missing: Int?, diskChecked: Bool,
        as work: Caller
    ) async throws -> Image {
        var stale = stale
        var missing = missing
        var result: Result<Image, any Swift.Error>
        // What the origin said, counted once the flight is complete: whoever follows a counter
        // finds the new entry in place.
        var outcome: [LiveCounter] = []
        do {
            if !diskChecked {
                switch try await diskLookup(request, flight: id) {
                case let .answer(entry, refreshing):
                    if work.countsHits { counters.diskHits.increment() }
                    if refreshing { answeredStale(entry, for: request, refreshing: true) }
                    complete(request, flight: id, with: .success(entry))
                    return entry
                case let .revalidate(entry): stale = entry
                case let .missing(status):
                    let error = knownMissing(status, request: request)
                    complete(request, flight: id, with: .failure(error))
                    throw error
                case let .missingStale(status): missing = status
                case .miss, .notRead: break
                }
            }
            let image = if let processor = request.processor {
                // 5. A variant, from its original (stages 1-6 for the original's own key).
                try await variant(request, processor: processor, stale: stale, flight: id, as: work)
            } else {
                // 4. The origin; bytes that do not match the feed are never cached.
                try await origin(request, stale: stale, flight: id, outcome: &outcome)
            }
            if image.cacheHeaders?.cacheControl.noStore == true {
                // 6. Never stored: and an older entry of the key goes too.
                readyDisk?.remove(forKey: request.cacheKey)
            } else if let disk = readyDisk {
                // 6. Store on disk, on the I/O threads; memory is filled when the flight completes.
                await store(image, forKey: request.cacheKey, to: disk, flight: id)
            }
            result = .success(image)
        } catch let error as ImagePipeline.Error where stale.map({ allowsStaleAnswer($0, for: request, after: error) }) == true {
            logger.notice("answering a stale copy of \(request.cacheKey): \(error)")
            answeredStale(stale!, for: request, refreshing: false)
            result = .success(stale!)
        } catch let error as ImagePipeline.Error where missing != nil && Self.originFailed(error) {
            // The origin said 404 before and cannot say otherwise now: still missing.
            logger.notice("\(request.cacheKey) is known missing; the origin cannot be asked again: \(error)")
            result = .failure(knownMissing(missing!, request: request))
        } catch {
            result = .failure(error)
        }
        complete(request, flight: id, with: result)
        for counter in outcome { counter.increment() }
        return try result.get()
    }

    /// Ends the flight: keeps a success in memory (unless `no-store`, or nobody waiting wants
    /// it there), remembers a failure until its expiry, and resumes every waiter.
    /// - Parameters:
    ///   - keepingInMemory: false when the image came from memory.
    ///   - leaderWantsMemory: the leader answers by itself (a disk hit) and wants the image kept:
    ///     then nobody else needs asking (a disk hit costs one lock fewer).
    private func complete(
        _ request: ImageRequest, flight id: FlightID, with result: Result<Image, any Swift.Error>,
        keepingInMemory: Bool = true, leaderWantsMemory: Bool = false
    ) {
        var remembered: (RememberedFailure, until: AnyClock<Duration>.Instant)?
        switch result {
        case let .success(image):
            // Before the flight ends, so a caller who finds no flight finds the image.
            if keepingInMemory, image.cacheHeaders?.cacheControl.noStore != true,
               leaderWantsMemory || bookkeeping.withLock({ $0.wantsMemory(id) }) {
                memory.insert(image, forKey: request.cacheKey)
            }
        case .failure(ImagePipeline.Error.notCached), .failure(ImagePipeline.Error.tooBusy):
            break  // an answer of this request's policy or of the load now, not of the origin: not remembered
        case let .failure(error as ImagePipeline.Error):
            let expiry = error.isTransient ? configuration.transientFailureExpiry : configuration.permanentFailureExpiry
            remembered = (RememberedFailure(error: error, expectedSHA256: request.expectedSHA256), clock.now.advanced(by: expiry))
        case .failure:
            break  // cancellation, or an error of a custom fetcher: not remembered
        }
        guard let waiters = bookkeeping.withLock({ $0.finish(id, remembering: remembered) }) else { return }
        if let error = remembered?.0.error {
            counters.failures.increment()
            // Once per failed flight, however many waited for it: the waiters get the error, the
            // operator the reason (a forged or undecodable image otherwise shows only to its caller).
            logger.log(
                level: Self.logLevel(of: error), "loading failed, remembered for \(error.isTransient ? "the transient" : "the permanent") expiry: \(error)",
                metadata: ["key": "\(request.cacheKey)"])
        }
        let answer = result.map { Optional($0) }
        for waiter in waiters { waiter.resume(with: answer) }
    }

    /// How loud a remembered failure is logged: bytes or a request that can never succeed as
    /// they are (a checksum mismatch, an undecodable image, too large, an invalid URL) are a
    /// warning; what the origin said or could not say (a status, a time-out) is a notice, but
    /// for 404 and 410, an answer about the image rather than a fault (debug).
    static func logLevel(of error: ImagePipeline.Error) -> Logger.Level {
        switch error {
        case .checksumMismatch, .processingFailed, .bodyTooLarge, .invalidURL: .warning
        case .httpStatus(404, _), .httpStatus(410, _): .debug
        default: .notice
        }
    }

    /// Whether `failure` is about the bytes (not transient: a mismatch, a 404 or 410, an
    /// undecodable image) and was remembered for a request that expected other bytes than
    /// `request` does.
    static func isForAnotherEdition(_ failure: RememberedFailure?, _ request: ImageRequest) -> Bool {
        guard let failure, !failure.error.isTransient else { return false }
        return failure.expectedSHA256 != request.expectedSHA256
    }

    /// Waits for flight `id` as its `member`. Cancelling the calling task returns at once with
    /// `CancellationError`; the last waiter to cancel cancels the work.
    /// - Parameter joining: a caller other than the leader, counted as coalesced once it waits.
    /// - Returns: `nil` when the flight ended before this waiter was added.
    private func wait(flight id: FlightID, member: Machine.MemberID, joining: Bool) async throws -> Image? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Image?, any Swift.Error>) in
                switch bookkeeping.withLock({ $0.addWaiter(continuation, member: member, flight: id) }) {
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
            switch bookkeeping.withLock({ $0.cancel(member, of: id) }) {
            case .none:
                break
            case let .resume(waiter):
                waiter.resume(throwing: CancellationError())
            case let .resumeAndCancelWork(waiter, work):
                waiter.resume(throwing: CancellationError())
                work?.cancel()
            }
            changed()  // the flight's priority may have fallen
        }
    }

    // MARK: - Clearing

    /// Empties memory and forgets remembered failures; running flights go on.
    public func clearMemory() {
        memory.removeAll()
        bookkeeping.withLock { $0.forgetFailures() }
    }

    /// Forgets the failure remembered for `key`, so the next request tries again.
    public func forgetFailure(forKey key: String) {
        bookkeeping.withLock { $0.forgetFailure(key) }
    }
}
