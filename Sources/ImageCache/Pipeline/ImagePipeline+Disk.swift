import Foundation
import HTTPCaching
import Logging
import Synchronization

/// The disk tier: set-up once, reads within their limit, writes on the I/O threads.
extension ImagePipeline {
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

    func runSetUp(_ disk: DiskStorage) -> Result<DiskStorage.SetUpReport, ImageLoader.Error> {
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

    /// Reads `key`'s entry: a damaged one is deleted, counted and answered as a miss. The caller
    /// counts the hit once it answers with it.
    func read(_ key: String, from disk: DiskStorage) -> Image? {
        do {
            return try disk.read(forKey: key)
        } catch {
            if case .corruptEntry = error { counters.corruptEntries.increment() } else { counters.diskFailures.increment() }
            logger.warning("\(error)")
            return nil
        }
    }

    /// Stage 6: writes the flight's result within the disk-write limit, on the I/O threads.
    /// Refused or cancelled, the image is still answered, only not stored.
    func store(_ image: Image, forKey key: String, to disk: DiskStorage, flight id: Flights.FlightID) async {
        guard scheduler.limits.isScheduling else { return write(image, forKey: key, to: disk) }
        do {
            try await scheduler.run(.diskWrite, for: .flight(id)) {
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
        /// Nothing usable.
        case miss
        /// Not read: the caller left while waiting for a disk-read slot.
        case notRead
    }

    /// Stage 3: reads `request`'s entry within the disk-read limit and decides by its freshness.
    /// - Parameter node: the node the read queues as, asked for only if it has to wait.
    func diskLookup(_ request: ImageRequest, queueingFor node: () -> Scheduler.Node) async throws -> DiskLookup {
        guard request.cachePolicy != .reloadIgnoringCacheData, let disk = await usableDisk() else { return .miss }
        let key = request.cacheKey
        guard let entry = try await scheduler.run(.diskRead, queueingFor: node, { read(key, from: disk) }) else {
            return .miss
        }
        if request.processor == nil, let digest = entry.originalSHA256 {
            _ = originals.withLock { $0.insert(digest, forKey: key, cost: 1) }
        }
        switch lookup(entry, for: request) {
        case .answer: return .answer(entry, refreshing: false)
        case .answerAndRefresh: return .answer(entry, refreshing: true)
        case .revalidate: return .revalidate(entry)
        case .miss: return .miss
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
}
