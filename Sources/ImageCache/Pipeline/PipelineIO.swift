import Foundation
import HTTPCaching
import Logging
import Synchronization

/// The pipeline's hands: everything that reads memory, reads or writes the disk, fetches,
/// hashes or processes, and the freshness rules those answers are judged by. Not isolated to
/// ``ImageDatabase``: the engine decides on the actor and calls these, which run off it on
/// purpose: every `async` one is `@concurrent` (the generic executor, then the processing
/// threads or the I/O threads), so no compiler default (`NonisolatedNonsendingByDefault`, which
/// this module is built with) can run it on the actor, whose one serial executor only ever
/// does bookkeeping. The front door's memory hit runs here too, on the
/// caller's thread. `Sendable`: every member is immutable or guards itself (the memory cache's
/// mutex, the counters' atomics, the disk's index).
final class PipelineIO: Sendable {
    let configuration: ImagePipeline.Configuration
    /// The memory tier, read synchronously by any thread.
    let memory: MemoryCache
    /// The disk tier; `nil` for a memory-only pipeline.
    let disk: DiskStorage?
    /// Whether ``disk`` is set up: read on every miss, so a flag rather than a hop.
    let diskIsReady = Atomic<Bool>(false)
    let counters = Counters()
    let logger: Logger
    /// Tells the date: freshness is wall-clock time, kept across restarts.
    let now: @Sendable () -> Date
    /// Where processors and the hashing of large bodies run: never on Swift's cooperative threads.
    let processingPool: WorkerPool
    /// Where disk writes (and their `fsync`) run.
    let ioPool: WorkerPool

    /// The pipeline's live counts: each an atomic, bumped from any thread.
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

    init(configuration: ImagePipeline.Configuration, now: @escaping @Sendable () -> Date) {
        self.configuration = configuration
        self.now = now
        logger = configuration.logger
        memory = MemoryCache(costLimit: configuration.memoryCostLimit, countLimit: configuration.memoryCountLimit)
        disk = configuration.diskDirectory.map {
            DiskStorage(
                directory: $0, sizeLimit: configuration.diskSizeLimit,
                synchronizesWrites: configuration.synchronizesWrites, logger: configuration.logger
            )
        }
        processingPool = WorkerPool(name: "processing", threads: configuration.limits.processing)
        ioPool = WorkerPool(name: "io", threads: configuration.limits.diskWrites)
    }

    /// The disk, once set up.
    var readyDisk: DiskStorage? { diskIsReady.load(ordering: .acquiring) ? disk : nil }

    // MARK: - Memory

    /// What memory holds for a request.
    enum MemoryAnswer {
        /// A usable entry (counted as a hit); `refresh`: answered stale-while-revalidate.
        case hit(Image, refresh: Bool)
        /// An entry to revalidate with the origin.
        case stale(Image)
        case miss
    }

    /// Looks in memory, synchronously: one lock, no task, no hop.
    func lookInMemory(_ request: ImageRequest, countingHit: Bool) -> MemoryAnswer {
        guard request.cachePolicy != .reloadIgnoringCacheData,
              case let (entry?, original) = memory.touch(request.cacheKey, original: request.processor == nil ? nil : request.originalCacheKey)
        else { return .miss }
        switch lookup(entry, for: request, knownOriginal: .some(original)) {
        case .answer:
            if countingHit { memory.hits.increment() }
            return .hit(entry, refresh: false)
        case .answerAndRefresh:
            if countingHit { memory.hits.increment() }
            counters.staleAnswers.increment()
            return .hit(entry, refresh: request.cachePolicy.allowsLoading)
        case .revalidate:
            return .stale(entry)
        case .miss:
            return .miss
        }
    }

    // MARK: - Freshness

    /// How an entry found in memory or on disk answers a request.
    enum Lookup: Equatable {
        case answer
        /// Answered, and refreshed in the background (`stale-while-revalidate`).
        case answerAndRefresh
        /// Asked of the origin, conditionally on the entry's validators.
        case revalidate
        case miss
    }

    /// Judges `entry` for `request` by its policy and RFC 9111 at ``now``. A variant carries
    /// its original's headers and SHA-256: it goes stale with it, and one made from other bytes
    /// than the original has now (`knownOriginal`, or memory's) is never answered.
    func lookup(_ entry: Image, for request: ImageRequest, knownOriginal: String?? = .none) -> Lookup {
        let source = entry.originalSHA256
        // Not from HTTP and nothing known of its bytes (stored by hand, a custom fetcher's):
        // answered unless the request reloads.
        if source == nil, !entry.hasCacheHeaders {
            switch request.cachePolicy {
            case .reloadIgnoringCacheData: return .miss
            case .reloadRevalidatingCacheData: return .revalidate
            default: return .answer
            }
        }
        if let source {
            if request.processor != nil {
                if let expected = request.expectedSHA256, expected != source { return .miss }
                if let known = knownOriginal ?? memory.original(forKey: request.originalCacheKey), known != source { return .miss }
            } else if let expected = request.expectedSHA256, expected != source {
                // Not the bytes the request expects (the feed lists others now, or they were
                // planted with a digest of their own): the whole image from the origin, or, when
                // nothing may be loaded, not cached. Never answered, fresh or not.
                return request.cachePolicy.allowsLoading ? .revalidate : .miss
            }
        }
        switch request.cachePolicy {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
            return .answer
        case .reloadIgnoringCacheData:
            return .miss
        case .reloadRevalidatingCacheData:
            guard entry.isImmutable else { return .revalidate }
            return entry.freshness(at: now())?.state == .fresh ? .answer : .revalidate
        case .useProtocolCachePolicy:
            guard let freshness = entry.freshness(at: now()) else { return .answer }  // not from HTTP
            switch freshness.state {
            case .fresh: return .answer
            case .staleWhileRevalidate: return .answerAndRefresh
            case .stale, .mustRevalidate: return .revalidate
            }
        }
    }

    /// Whether `stale` may answer `request` after the origin failed with `error`
    /// (`stale-if-error`, or an origin that cannot be reached).
    func allowsStaleAnswer(_ stale: Image, for request: ImageRequest, after error: ImagePipeline.Error) -> Bool {
        if let expected = request.expectedSHA256, let held = stale.originalSHA256, held != expected { return false }
        switch error {
        case let .httpStatus(status, _) where status >= 500: break
        case .timeout, .connectionFailed, .originUnreachable: break
        default: return false
        }
        guard let headers = stale.cacheHeaders else { return true }
        return headers.freshness(at: now()).allowsStaleAnswer(originUnreachable: error.isOriginUnreachable)
    }

    // MARK: - Disk

    /// What the disk holds for a request, judged.
    enum DiskLookup {
        case answer(Image, refreshing: Bool)
        case revalidate(Image)
        /// A stored 404 or 410 that answers the request.
        case missing(status: Int)
        /// A stored 404 or 410 to answer only if the origin cannot be asked.
        case missingStale(status: Int)
        case miss
    }

    /// Reads `request`'s entry and judges it: an original's bytes are checked against the
    /// SHA-256 stored with them (a planted entry is deleted). Runs off the actor.
    @concurrent func readDisk(_ request: ImageRequest, from disk: DiskStorage) async -> DiskLookup {
        let key = request.cacheKey
        let entry: Image
        switch await readEntry(key, from: disk) {
        case nil: return .miss
        case let .image(image): entry = image
        case let .missing(status, headers, expected):
            return missingLookup(status: status, headers: headers, expectedSHA256: expected, for: request)
        }
        // An original is an image on disk as from the origin: bytes that begin as none (kept by a
        // version before the check, or planted) are deleted and fetched again, never answered.
        if request.processor == nil, !request.acceptsAnyData, entry.withUnsafeBytes({ ImageSignature.format(of: $0) }) == nil {
            counters.corruptEntries.increment()
            logger.warning("\(ImagePipeline.Error.corruptEntry(file: disk.fileName(forKey: key), reason: "its bytes are no image"))")
            disk.remove(forKey: key)
            return .miss
        }
        if request.processor == nil, let named = entry.originalSHA256 ?? request.expectedSHA256 {
            // An original's bytes are checked against the digest stored with them (or, stored
            // without one, the request's), as a download's are against the feed's: bytes changed
            // on disk under the digest that let them in (a planted entry) are deleted and fetched
            // again. (A variant's bytes have no digest to check: see the README's threat model.)
            guard await digest(of: entry) == named else {
                counters.corruptEntries.increment()
                logger.warning("\(ImagePipeline.Error.corruptEntry(file: disk.fileName(forKey: key), reason: "its bytes are not the ones its SHA-256 names: changed on disk"))")
                disk.remove(forKey: key)
                return .miss
            }
            if let stored = entry.originalSHA256 { memory.rememberOriginal(stored, forKey: key) }
        }
        switch lookup(entry, for: request) {
        case .answer: return .answer(entry, refreshing: false)
        case .answerAndRefresh: return .answer(entry, refreshing: true)
        case .revalidate: return .revalidate(entry)
        case .miss: return .miss
        }
    }

    /// How long a stored 404 or 410 may answer by its own headers, at most: a day.
    static let knownMissingLifetimeCap: TimeInterval = 86_400

    func missingLookup(status: Int, headers: CacheHeaders?, expectedSHA256: String?, for request: ImageRequest) -> DiskLookup {
        // An answer nobody signed, about bytes the feed may have named since: not for them.
        guard expectedSHA256 == request.expectedSHA256 else { return .miss }
        switch request.cachePolicy {
        case .returnCacheDataDontLoad:
            return .missing(status: status)
        case .returnCacheDataElseLoad:
            return request.retryingFailures ? .missingStale(status: status) : .missing(status: status)
        case .reloadIgnoringCacheData, .reloadRevalidatingCacheData:
            return .missingStale(status: status)
        case .useProtocolCachePolicy:
            guard !request.retryingFailures, let freshness = headers?.freshness(at: now()), freshness.state == .fresh,
                  freshness.age < Self.knownMissingLifetimeCap
            else {
                return .missingStale(status: status)
            }
            return .missing(status: status)
        }
    }

    /// Reads an entry; a damaged one is counted, logged and deleted by the disk.
    @concurrent func readEntry(_ key: String, from disk: DiskStorage) async -> DiskStorage.Entry? {
        do {
            return try disk.readEntry(forKey: key)
        } catch {
            if case .corruptEntry = error { counters.corruptEntries.increment() } else { counters.diskFailures.increment() }
            logger.warning("\(error)")
            return nil
        }
    }

    /// Writes `image` under `key` on the I/O threads (temporary file, fsync, rename).
    @concurrent func write(_ image: Image, forKey key: String, to disk: DiskStorage) async {
        do {
            try await ioPool.run { [self] in
                do {
                    try disk.write(image, forKey: key)
                } catch {
                    counters.diskFailures.increment()
                    logger.error("\(error)")
                }
            }
        } catch {
            logger.debug("\(key) was not stored: \(error)")
        }
    }

    /// Remembers on disk that the origin answered `status` for `request`.
    @concurrent func writeMissing(status: Int, headers: CacheHeaders, for request: ImageRequest, to disk: DiskStorage) async {
        let (key, expected) = (request.cacheKey, request.expectedSHA256)
        do {
            try await ioPool.run { [self] in
                do {
                    try disk.writeMissing(status: status, cacheHeaders: headers, expectedSHA256: expected, forKey: key)
                } catch {
                    counters.diskFailures.increment()
                    logger.error("\(error)")
                }
            }
        } catch {
            logger.debug("that \(key) is missing was not stored: \(error)")
        }
    }

    /// Sets up `disk` (directory, permissions, sweep, index), off the actor; marks it ready.
    @concurrent func setUp(_ disk: DiskStorage) async -> Result<DiskStorage.SetUpReport, ImagePipeline.Error> {
        let result = Result { () throws(ImagePipeline.Error) in try disk.setUp() }
        switch result {
        case let .success(report):
            diskIsReady.store(true, ordering: .releasing)
            logger.debug("disk cache ready", metadata: [
                "directory": "\(disk.directory.path)", "entries": "\(report.entries)", "bytes": "\(report.bytes)",
            ])
        case let .failure(error):
            counters.diskFailures.increment()
            logger.error("disk cache unavailable, using memory and network only: \(error)")
        }
        return result
    }

    /// Empties the disk, off the actor.
    @concurrent func removeAll(from disk: DiskStorage) async {
        disk.removeAll()
    }

    /// Removes `key`'s entry from the disk, off the actor.
    @concurrent func remove(_ key: String, from disk: DiskStorage) async {
        disk.remove(forKey: key)
    }

    // MARK: - Origin and processing

    /// Bodies at least this large are hashed on the processing threads.
    static let largePayload = 1 << 20

    /// The SHA-256 of `image`'s bytes, as lowercase hex.
    @concurrent func digest(of image: Image) async -> String {
        guard image.byteCount >= Self.largePayload else { return SHA256Hex.digest(image) }
        return (try? await processingPool.run { SHA256Hex.digest(image) }) ?? SHA256Hex.digest(image)
    }

    /// Asks the origin, counting what it answered. Runs off the actor.
    @concurrent func fetch(_ request: ImageRequest, revalidating validators: CacheHeaders?) async throws -> (OriginResponse, requested: Date, answered: Date) {
        counters.originFetches.increment()
        let requestTime = now()
        do {
            let response = try await configuration.fetcher.fetch(request, revalidating: validators)
            return (response, requestTime, now())
        } catch {
            countUnusable(error)
            throw error
        }
    }

    /// `image` with its SHA-256, checked against the one the request expects (the feed's); and,
    /// unless the request takes any data, checked to be an image by its first bytes.
    @concurrent func verified(_ image: Image, request: ImageRequest) async throws -> Image {
        if !request.acceptsAnyData, image.withUnsafeBytes({ ImageSignature.format(of: $0) }) == nil {
            throw ImagePipeline.Error.notAnImage(url: request.url.absoluteString, contentType: image.contentType)
        }
        let actual = await digest(of: image)
        if let expected = request.expectedSHA256, actual != expected {
            throw ImagePipeline.Error.checksumMismatch(expected: expected, actual: actual, url: request.url.absoluteString)
        }
        var image = image
        image.originalSHA256 = actual
        return image
    }

    /// Runs `processor` on `image` on the processing threads; its own error is kept.
    @concurrent func process(_ image: Image, with processor: any ImageProcessing) async throws -> Image {
        do {
            return try await withTaskExecutorPreference(processingPool) { try await processor.process(image) }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ImagePipeline.Error.processingFailed(processor: processor.identifier, underlying: error)
        }
    }

    func countUnusable(_ error: any Swift.Error) {
        switch error {
        case let ImagePipeline.Error.httpStatus(status, _) where DiskEntry.missingStatuses.contains(status):
            counters.missingAnswers.increment()
        case ImagePipeline.Error.httpStatus, ImagePipeline.Error.bodyTooLarge:
            counters.errorAnswers.increment()
        default:
            counters.unanswered.increment()
        }
    }

    /// The error of a stored 404 or 410, counted.
    func knownMissing(_ status: Int, request: ImageRequest) -> ImagePipeline.Error {
        counters.knownMissing.increment()
        return .httpStatus(status, url: request.url.absoluteString)
    }

    /// Whether `error` is the origin's fault (a 5xx, or unreachable): a stale answer may stand in.
    static func originFailed(_ error: ImagePipeline.Error) -> Bool {
        if case let .httpStatus(status, _) = error { return status >= 500 }
        return error.isOriginUnreachable
    }
}
