import Foundation
import HTTPCaching
import Logging
import Synchronization

/// The disk tier: set-up once, reads within their limit, writes on the I/O threads.
extension ImagePipeline {
    /// Prepares the disk tier: creates the directory, deletes leftovers of killed writers and
    /// indexes the entries. Runs once: concurrent and later calls await the same set-up, and the
    /// first lookup that needs the disk starts it when nobody called it before.
    ///
    /// Never throws: a disk that cannot be used is logged, counted and reported here, and the
    /// pipeline runs on memory and network.
    public func setUp() async -> Result<DiskStorage.SetUpReport, Error> {
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

    func runSetUp(_ disk: DiskStorage) -> Result<DiskStorage.SetUpReport, ImagePipeline.Error> {
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

    /// The disk once set up (setting it up on first use), or `nil` when there is none or it
    /// failed.
    func usableDisk() async -> DiskStorage? {
        if let ready = readyDisk { return ready }
        guard disk != nil, case .success = await setUp() else { return nil }
        return readyDisk
    }

    /// Whether `request`'s image is in memory, usable (fresh, and for a variant made from the
    /// original the request expects), or listed on the disk; without reading a file, counting a
    /// hit or making anything. A cheap "would this be answered without processing or the
    /// network?": a disk listing is not read, so an entry found stale, damaged or made from an
    /// earlier original when it is read still means work (``DiskStorage/contains(key:)``).
    /// `false` for the disk while it is not set up.
    public func isCached(_ request: ImageRequest) -> Bool {
        if let entry = memory.peek(request.cacheKey) {
            switch lookup(entry, for: request) {
            case .answer, .answerAndRefresh: return true
            case .revalidate, .miss: break
            }
        }
        return isListedOnDisk(request)
    }

    /// The disk if it is set up and usable, without setting it up.
    var readyDisk: DiskStorage? { diskIsReady.load(ordering: .acquiring) ? disk : nil }

    /// Whether the disk tier is set up and usable.
    var isDiskAvailable: Bool { readyDisk != nil }

    /// Reads `key`'s image: a damaged entry is deleted, counted and answered as a miss, and so is
    /// a known-missing one (it is no image). The caller counts the hit once it answers with it.
    func read(_ key: String, from disk: DiskStorage) -> Image? {
        guard case let .image(image) = readEntry(key, from: disk) else { return nil }
        return image
    }

    /// Reads `key`'s entry, an image or a known-missing one: a damaged one is deleted, counted
    /// and answered as a miss.
    func readEntry(_ key: String, from disk: DiskStorage) -> DiskStorage.Entry? {
        do {
            return try disk.readEntry(forKey: key)
        } catch {
            if case .corruptEntry = error { counters.corruptEntries.increment() } else { counters.diskFailures.increment() }
            logger.warning("\(error)")
            return nil
        }
    }

    /// Stage 6: writes the flight's result within the disk-write limit, on the I/O threads.
    /// Refused or cancelled, the image is still answered, only not stored.
    func store(_ image: Image, forKey key: String, to disk: DiskStorage, flight id: FlightID) async {
        do {
            try await run(.diskWrite, for: id) {
                try await ioPool.run { self.write(image, forKey: key, to: disk) }
            }
        } catch {
            logger.debug("\(key) was not stored: \(error)")
        }
    }

    /// What the disk says about a request's key.
    enum DiskLookup {
        /// A usable entry; `refreshing` when it is answered stale with a refresh.
        case answer(Image, refreshing: Bool)
        /// A stale entry to revalidate.
        case revalidate(Image)
        /// The origin answered `status` (404 or 410) and that answer is still usable: fail with it.
        case missing(status: Int)
        /// The origin answered `status`, but that answer is stale: ask again, and answer it if
        /// the origin cannot be reached (RFC 9111 4.2.4, as for a stale image).
        case missingStale(status: Int)
        /// Nothing usable.
        case miss
        /// Not read: the caller left while waiting for a disk-read slot.
        case notRead
    }

    /// Stage 3: reads `request`'s entry within the disk-read limit, as the work of flight `id`,
    /// and decides by its freshness.
    func diskLookup(_ request: ImageRequest, flight id: FlightID) async throws -> DiskLookup {
        guard request.cachePolicy != .reloadIgnoringCacheData, let disk = await usableDisk() else { return .miss }
        let key = request.cacheKey
        let found = try await run(.diskRead, for: id) { readEntry(key, from: disk) }
        let entry: Image
        switch found {
        case nil: return .miss
        case let .image(image): entry = image
        case let .missing(status, headers, expected):
            return missingLookup(status: status, headers: headers, expectedSHA256: expected, for: request)
        }
        if request.processor == nil, let named = entry.originalSHA256 ?? request.expectedSHA256 {
            // An original's bytes are checked against the digest stored with them (or, stored
            // without one, the request's), as a download's are against the feed's: bytes changed
            // on disk under the digest that let them in (a planted entry) are deleted and fetched
            // again. (A variant's bytes have no digest to check: see the README's threat model.)
            guard try await digest(of: entry, flight: id) == named else {
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

    /// Whether a known-missing entry answers `request`: never when the request expects other bytes
    /// than the one that found the resource missing (`expectedSHA256`: a later edition of the feed
    /// lists the image again); offline, or a policy that prefers the cache, always (as a stale
    /// image would be); by the protocol's rules, while its headers say the 404 is fresh, for
    /// ``knownMissingLifetimeCap`` at most; never for a reload or a request that retries failures.
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

    /// The longest a stored 404 or 410 is believed without asking the origin again, whatever its
    /// headers say (one day): an answer nobody signed, that a moment on the network path or a
    /// cache in front could otherwise make last for decades.
    static let knownMissingLifetimeCap: TimeInterval = 86_400

    /// Stage 6 for a 404 or 410 with a lifetime: remembered on disk as a known-missing entry for
    /// requests that expect what `request` expects, within the disk-write limit, on the I/O threads.
    func storeMissing(status: Int, headers: CacheHeaders, for request: ImageRequest, flight id: FlightID) async {
        // An expectation too long to keep would leave an entry that answers requests expecting
        // nothing: not stored (a feed's checksum is far shorter).
        guard let disk = readyDisk, (request.expectedSHA256?.utf8.count ?? 0) <= DiskEntry.expectedSHA256Limit else { return }
        let (key, expected) = (request.cacheKey, request.expectedSHA256)
        let write: @Sendable () -> Void = {
            do {
                try disk.writeMissing(status: status, cacheHeaders: headers, expectedSHA256: expected, forKey: key)
            } catch {
                self.counters.diskFailures.increment()
                self.logger.error("\(error)")
            }
        }
        do {
            try await run(.diskWrite, for: id) { try await ioPool.run(write) }
        } catch {
            logger.debug("that \(key) is missing was not stored: \(error)")
        }
    }

    /// Keeps `image` under `key` (the book's `store(image:forKey:)`): in memory at once, with a
    /// failure remembered for the key forgotten, then on disk, written and flushed on the I/O
    /// threads while the caller waits. For an image made outside the pipeline (the app keeps its
    /// signed feed so); a disk write that fails is counted and logged.
    public func store(_ image: Image, forKey key: String) async {
        insert(image, forKey: key)
        guard let disk = await usableDisk() else { return }
        do {
            try await ioPool.run { self.write(image, forKey: key, to: disk) }
        } catch {
            logger.debug("\(key) was not stored: \(error)")
        }
    }

    /// Puts `image` in memory under `key`, forgetting a failure remembered for it (the book's
    /// `add(_:forKey:)`); nothing is written to disk.
    public func insert(_ image: Image, forKey key: String) {
        forgetFailure(forKey: key)
        memory.insert(image, forKey: key)
    }

    /// Whether the image of a request memory has just missed (``ImageDatabase/lookInMemory(_:)``)
    /// is listed on the disk: ``isCached(_:)`` without looking in memory again.
    func isListedOnDisk(_ request: ImageRequest) -> Bool {
        readyDisk?.contains(key: request.cacheKey) == true
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
}
