public import Foundation
import HTTPCaching
import Logging

/// The engine, isolated to the ``ImageDatabase`` global actor: one pipeline per memory and disk,
/// with the book's API (``image(_:)``, ``fetch(_:)-(URL)``, ``store(image:forKey:)``,
/// ``clear()``, ``setUp()``, ``shared``) and Nuke's (``image(for:)``, ``imageTask(with:)``).
///
/// ```swift
/// let pipeline = ImagePipeline(configuration: .init(diskDirectory: cacheDirectory))
/// let image = try await pipeline.image(for: ImageRequest(url: url))
/// ```
///
/// The path of one request, top to bottom in this file:
///
/// ```
/// image(for:)      front door, on the caller's thread: memory (one lock); a hit never touches the actor
/// load(_:stale:lookedAt:as:) on the actor: the key's flight, led or joined (PipelineStateMachine);
///                            a remembered failure answers at once
/// fly(_:flight:stale:as:)    the flight's work, a task on the actor that every waiter shares:
///   1. disk        [disk-read slot] read and checked off the actor (length, key, XXH3, SHA-256)
///   2. origin      [download slot, per host too] fetched and its SHA-256 checked off the actor
///   3. process     a variant's original is itself a request through load; [processing slot] the
///                  processor runs on the processing threads
///   4. answer      memory, then every waiter resumed: nobody waits for the disk
///   5. store       [disk-write slot] temporary file, fsync, rename on the I/O threads, after the
///                  answer; until then the bytes are held and a lookup of the key finds them
/// ```
///
/// Isolation: every piece of bookkeeping (flights and their waiters, priorities, each stage's
/// slots and queue, remembered failures) is state of this class on the
/// ``ImageDatabase`` actor, changed synchronously, with no `await` between reading it and acting
/// on it. Every pipeline shares the actor's one serial executor, as Nuke's pipelines share
/// `ImagePipelineActor`: the work on it is bookkeeping only. Reading memory and disk, fetching,
/// hashing and processing run off it (`PipelineIO`); the memory cache is the one structure read
/// synchronously from any thread.
@ImageDatabase
public final class ImagePipeline {
    /// What the bookkeeping holds: continuations, tasks, failures, instants.
    enum Handles: PipelineHandles {
        typealias Waiter = CheckedContinuation<ImageResponse?, any Swift.Error>
        typealias SlotWaiter = CheckedContinuation<Void, any Swift.Error>
        typealias Work = Task<Image, any Swift.Error>
        typealias Deadline = Task<Void, Never>
        typealias Failure = RememberedFailure
        typealias Instant = Duration
    }

    /// A failure remembered with the SHA-256 the request that met it expected (the feed's
    /// checksum then): a failure about the bytes (a mismatch, a 404, an undecodable image) does
    /// not answer a request that expects other bytes (a later edition of the feed).
    struct RememberedFailure: Swift.Error, Equatable, Sendable {
        let error: ImagePipeline.Error
        let expectedSHA256: String?

        /// Whether this failure is about the bytes (not transient: a mismatch, a 404 or 410, an
        /// undecodable image) and was remembered for a request that expected other bytes than
        /// `request` does.
        func isForAnotherEdition(than request: ImageRequest) -> Bool {
            !error.isTransient && expectedSHA256 != request.expectedSHA256
        }
    }

    typealias Machine = PipelineStateMachine<Handles>
    typealias FlightID = Machine.FlightID

    /// Memory, disk, fetcher, counters and the freshness rules: what runs off the actor.
    let io: PipelineIO
    /// Measures failure expiries and queue deadlines.
    let clock: PipelineClock
    /// Flights, members, priorities, stages and remembered failures.
    var machine: Machine
    /// The one set-up of the disk, awaited by every first caller.
    var setUpTask: Task<Result<DiskStorage.SetUpReport, ImagePipeline.Error>, Never>?
    /// Who follows ``SchedulingStats`` (see `onSchedulingChange`).
    var followers: [UInt64: AsyncStream<SchedulingStats>.Continuation] = [:]

    /// Creates a pipeline.
    /// - Parameters:
    ///   - configuration: memory, disk, fetcher, limits, expiries and the book's variant.
    ///   - clock: the clock failure expiries and queue deadlines run on; tests pass one they move.
    ///   - now: the wall clock HTTP freshness is judged by (it must survive restarts, so it is
    ///     the date); tests pass one they move.
    // Not isolated: it only stores, so a pipeline is made anywhere (a static `shared`, an app's
    // set-up) without a hop.
    public nonisolated init(
        configuration: Configuration = .init(),
        clock: some Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        io = PipelineIO(configuration: configuration, now: now)
        self.clock = PipelineClock(clock)
        machine = Machine(limits: configuration.limits)
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

    /// After memory: the key's flight, led or joined; a remembered failure answers at once.
    /// - Parameters:
    ///   - stale: the entry memory found to revalidate, if any.
    ///   - generation: memory's generation when the caller looked (``MemoryCache/generation``):
    ///     the leader looks again only if memory has gained an image since.
    func load(_ request: ImageRequest, stale: Image?, lookedAt generation: UInt64, as caller: Caller) async throws -> ImageResponse {
        var (stale, generation) = (stale, generation)
        let flightKey = request.flightKey
        var retrying = request.retryingFailures
        while true {
            let now = clock.now
            // A failure about bytes remembered for another expected digest (the feed has listed
            // a new edition of the image since) is not this request's answer: it loads again.
            let anotherEdition = machine.failure(flightKey, now: now)?.failure.isForAnotherEdition(than: request) == true
            let step = machine.begin(
                flightKey, asker: caller.asker, wantsMemory: caller.wantsMemory, now: now, retrying: retrying || anotherEdition
            )
            retrying = false  // a failure recorded from now on is this request's own answer
            switch step {
            case let .fail(remembered):
                throw remembered.error
            case let .join(id, member):
                priorityMayHaveRisen()
                if let response = try await wait(flight: id, member: member, joining: caller.countsHits) { return response }
            case let .lead(id, member):
                // A flight of this key may have ended since the caller looked (off the actor, its
                // look and this turn are not one step): its image would be in memory now, or a
                // newer entry to revalidate. Only then is memory's generation another.
                if io.memory.generation != generation {
                    switch io.lookInMemory(request, countingHit: caller.countsHits) {
                    case let .hit(image, _):
                        complete(request, flight: id, with: .success(ImageResponse(image: image, source: .memory)), keepingInMemory: false)
                        return ImageResponse(image: image, source: .memory)
                    case let .stale(entry): stale = entry
                    case .miss: break
                    }
                }
                let work = Caller(asker: .flight(id), countsHits: caller.countsHits, wantsMemory: caller.wantsMemory)
                let started = machine.handOff(id, leader: member, leaderCancelled: Task.isCancelled) {
                    Task { [stale] in try await self.fly(request, flight: id, stale: stale, as: work).image }
                }
                guard started else { throw CancellationError() }
                changed()
                if let response = try await wait(flight: id, member: member, joining: false) { return response }
            }
            // The flight ended before this caller's waiter was added (it cannot on the actor,
            // where joining and waiting are one turn): look again.
            generation = io.memory.generation
            if case let .hit(image, _) = io.lookInMemory(request, countingHit: false) {
                return ImageResponse(image: image, source: .memory)
            }
        }
    }

    /// The flight's work: disk, then origin or processing; answers every waiter, then stores.
    /// - Parameter stale: the entry being revalidated, if any: answered on a 304, or when the
    ///   origin fails and its headers allow a stale answer.
    private func fly(_ request: ImageRequest, flight id: FlightID, stale: Image?, as work: Caller) async throws -> ImageResponse {
        var stale = stale
        var staleSource = ImageResponse.Source.memory
        // A stored 404 or 410 that answers only if the origin cannot be asked.
        var missing: Int?
        var result: Result<ImageResponse, any Swift.Error>
        // What the origin said, counted as the flight completes (see `complete`).
        var outcome: [LiveCounter] = []
        do {
            // 1. Disk, within the disk-read limit; read and checked off the actor.
            if stale == nil, request.cachePolicy != .reloadIgnoringCacheData {
                switch try await diskLookup(request, flight: id) {
                case let .answer(entry, refreshing):
                    if work.countsHits { io.counters.diskHits.increment() }
                    if refreshing { refreshInBackground(request) }
                    let response = ImageResponse(image: entry, source: .disk)
                    complete(request, flight: id, with: .success(response))
                    return response
                case let .revalidate(entry): (stale, staleSource) = (entry, .disk)
                case let .missing(status): throw io.knownMissing(status, request: request)
                case let .missingStale(status): missing = status
                case .miss: break
                }
            }
            // Offline, an original that is not cached cannot be had; a variant still can, from a
            // cached original.
            guard request.cachePolicy.allowsLoading || request.processor != nil else {
                throw missing.map { io.knownMissing($0, request: request) } ?? ImagePipeline.Error.notCached(url: request.url.absoluteString)
            }
            let response = if let processor = request.processor {
                // 3. A variant, from its original (a request of its own through `load`).
                try await variant(request, processor: processor, stale: stale, flight: id, as: work)
            } else {
                // 2. The origin; bytes that do not match the feed are never cached.
                try await origin(request, stale: stale, staleSource: staleSource, flight: id, outcome: &outcome)
            }
            result = .success(response)
        } catch let error as ImagePipeline.Error where stale.map({ io.allowsStaleAnswer($0, for: request, after: error) }) == true {
            io.logger.notice("answering a stale copy of \(request.cacheKey): \(error)")
            io.counters.staleAnswers.increment()
            result = .success(ImageResponse(image: stale!, source: staleSource))
        } catch let error as ImagePipeline.Error where missing != nil && PipelineIO.originFailed(error) {
            // The origin said 404 before and cannot say otherwise now: still missing.
            io.logger.notice("\(request.cacheKey) is known missing; the origin cannot be asked again: \(error)")
            result = .failure(io.knownMissing(missing!, request: request))
        } catch {
            result = .failure(error)
        }
        // 5. The disk, after the answer: a no-store answer is never stored, and an older entry
        //    goes too. Only when too many bytes wait for their writes does the answer wait too.
        let disk = io.readyDisk
        let stores = disk != nil && ((try? result.get()).map { $0.source == .network || $0.source == .processed || $0.isRevalidated } ?? false)
        let noStore = (try? result.get())?.image.cacheHeaders?.cacheControl.noStore == true
        if stores, !noStore, let disk, case let .success(response) = result,
           io.memory.heldForWrites.bytes + response.image.byteCount > io.configuration.limits.pendingWriteBytes {
            await store(response.image, forKey: request.cacheKey, to: disk, flight: id, priority: nil)
            complete(request, flight: id, with: result, counting: outcome)
            return response
        }
        // 4. The answer, before the disk. The write keeps the flight's priority, which ends here.
        let priority = machine.priority(ofFlight: id)
        complete(request, flight: id, with: result, counting: outcome)
        let response = try result.get()
        if stores, let disk {
            if noStore {
                await io.remove(request.cacheKey, from: disk)
            } else {
                await store(response.image, forKey: request.cacheKey, to: disk, flight: id, priority: priority)
            }
        }
        return response
    }

    /// Ends the flight: keeps a success in memory (unless `no-store`, or nobody waiting wants
    /// it there), remembers a failure until its expiry, and resumes every waiter.
    /// - Parameters:
    ///   - keepingInMemory: false when the image came from memory.
    ///   - outcome: what the origin said, counted on success once the image is in memory (whoever
    ///     follows a counter finds it in place) and before any waiter resumes (who reads the
    ///     counters after its answer finds them counted).
    func complete(
        _ request: ImageRequest, flight id: FlightID, with result: Result<ImageResponse, any Swift.Error>, keepingInMemory: Bool = true,
        counting outcome: [LiveCounter] = []
    ) {
        var remembered: (RememberedFailure, until: Duration)?
        switch result {
        case let .success(response):
            // Before the flight ends, so a caller who finds no flight finds the image.
            if keepingInMemory, response.image.cacheHeaders?.cacheControl.noStore != true, machine.wantsMemory(id) {
                io.memory.insert(response.image, forKey: request.cacheKey)
            }
        case .failure(ImagePipeline.Error.notCached), .failure(ImagePipeline.Error.tooBusy):
            break  // an answer of this request's policy or of the load now, not of the origin: not remembered
        case let .failure(error as ImagePipeline.Error):
            let expiry = error.isTransient ? io.configuration.transientFailureExpiry : io.configuration.permanentFailureExpiry
            remembered = (RememberedFailure(error: error, expectedSHA256: request.expectedSHA256), clock.now + expiry)
        case .failure:
            break  // cancellation, or an error of a custom fetcher: not remembered
        }
        // A refresh whose bytes were then refused (not the ones the feed lists) is no refresh.
        if case .success = result { for counter in outcome { counter.increment() } }
        guard let waiters = machine.finish(id, remembering: remembered) else { return }
        if let error = remembered?.0.error {
            io.counters.failures.increment()
            // Once per failed flight, however many waited for it: the waiters get the error, the
            // operator the reason (a forged or undecodable image otherwise shows only to its caller).
            io.logger.log(
                level: error.logLevel, "loading failed, remembered for \(error.isTransient ? "the transient" : "the permanent") expiry: \(error)",
                metadata: ["key": "\(request.cacheKey)"])
        }
        let answer = result.map { Optional($0) }
        for waiter in waiters { waiter.resume(with: answer) }
        changed()
    }

    /// Waits for flight `id` as its `member`: the waiter is added in the same turn as the
    /// caller joined or handed off. Cancelling the calling task returns at once with
    /// `CancellationError`; the last waiter to cancel cancels the work.
    /// - Parameter joining: a caller other than the leader, counted as coalesced once it waits.
    /// - Returns: `nil` when the flight ended before this waiter was added.
    private func wait(flight id: FlightID, member: Machine.MemberID, joining: Bool) async throws -> ImageResponse? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Handles.Waiter) in
                switch machine.addWaiter(continuation, member: member, flight: id) {
                case .waiting:
                    if joining { io.counters.coalesced.increment() }
                case .ended:
                    continuation.resume(returning: nil)
                case let .cancelled(work):
                    work?.cancel()
                    continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            // On the canceller's thread: the bookkeeping is the actor's, so the cancellation
            // is a turn of its own (a waiter added meanwhile is found and resumed).
            Task { @ImageDatabase in self.cancel(member, of: id) }
        }
    }

    private func cancel(_ member: Machine.MemberID, of id: FlightID) {
        switch machine.cancel(member, of: id) {
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
