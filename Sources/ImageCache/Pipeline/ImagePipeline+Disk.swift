import Foundation
import HTTPCaching
import Logging
import Synchronization

/// The disk tier's bookkeeping: its one set-up, the disk-read and disk-write slots, and the
/// images answered but not yet written.
extension ImagePipeline {
    /// Sets up the disk tier once (creates the directory, checks its permissions, sweeps
    /// temporary files, reads the index); every caller awaits the same set-up.
    /// - Returns: the set-up's report, or why the disk is not used (images still load from
    ///   memory and network).
    @discardableResult
    public func setUp() async -> Result<DiskStorage.SetUpReport, ImagePipeline.Error> {
        guard let disk = io.disk else {
            return .failure(.diskFailure(path: "(none)", reason: "this pipeline has no disk tier: set Configuration.diskDirectory"))
        }
        // The directory's listing and sweep run off the actor (`PipelineIO.setUp`).
        let task = setUpTask ?? Task { [io] in await io.setUp(disk) }
        setUpTask = task
        return await task.value
    }

    /// The disk once it is set up; `nil` without a disk or when it failed.
    func usableDisk() async -> DiskStorage? {
        if let ready = io.readyDisk { return ready }
        guard io.disk != nil, case .success = await setUp() else { return nil }
        return io.readyDisk
    }

    /// Stage 1: the disk, within the disk-read limit. (An image answered but not yet written is
    /// found in memory, which holds it until its write ends: by the caller's look, or the
    /// leader's look again.)
    func diskLookup(_ request: ImageRequest, flight id: FlightID) async throws -> PipelineIO.DiskLookup {
        guard let disk = await usableDisk() else { return .miss }
        return try await inSlot(.diskRead, for: id) { [io] in await io.readDisk(request, from: disk) }
    }

    /// Stage 5: writes an answered image within the disk-write limit. Until it is written,
    /// memory holds the image (``MemoryCache``'s pending writes: the one record of them) so a
    /// lookup of its key finds it and ``flush()`` waits for it; beyond
    /// ``Limits/pendingWriteBytes`` the flight waits for its write before it ends.
    /// - Parameters:
    ///   - id: the flight whose answer this is (``store(image:forKey:)``: a new id, no flight).
    ///   - priority: the flight's, which has ended by then: the write keeps its place.
    func store(_ image: Image, forKey key: String, to disk: DiskStorage, flight id: FlightID, priority: ImageRequest.Priority?) async {
        // Two writes of one key may overlap (a refresh): the later one's image stays held.
        let write = machine.makeID()
        io.memory.hold(image, forKey: key, write: write)
        defer {
            io.memory.release(forKey: key, write: write, bytes: image.byteCount)
            changed()  // whoever follows the stages (flush) sees the write end
        }
        do {
            try await inSlot(.diskWrite, for: id, priority: priority) { [io] in await io.write(image, forKey: key, to: disk) }
        } catch {
            io.logger.debug("\(key) was not stored: \(error)")
        }
    }

    /// Returns once every image answered so far is written to disk (or its write failed). Call
    /// it before a program that used a disk cache ends: an answer does not wait for its write,
    /// and a write still under way when the process exits is lost (the entry is fetched again
    /// next time). `emojiart sync` calls it before its report, the app at its shutdown.
    public func flush() async {
        guard io.memory.heldForWrites.writes > 0 else { return }
        for await _ in onSchedulingChange where io.memory.heldForWrites.writes == 0 { return }
    }

    /// Returns once no image of `key` waits for its disk write (``store``): a write gives its
    /// slot back with a change (``onSchedulingChange``) and lets go of its image in that turn.
    func writeFinished(forKey key: String) async {
        guard io.memory.isHeldForWrite(key) else { return }
        for await _ in onSchedulingChange where !io.memory.isHeldForWrite(key) { return }
    }

    /// Remembers on disk that the origin answered `status` (RFC 9111 allows storing a 404).
    func storeMissing(status: Int, headers: CacheHeaders, for request: ImageRequest, flight id: FlightID) async {
        // An expectation too long to keep would leave an entry that answers requests expecting
        // nothing: not stored (a feed's checksum is far shorter).
        guard let disk = io.readyDisk, (request.expectedSHA256?.utf8.count ?? 0) <= DiskEntry.expectedSHA256Limit else { return }
        do {
            try await inSlot(.diskWrite, for: id) { [io] in await io.writeMissing(status: status, headers: headers, for: request, to: disk) }
        } catch {
            io.logger.debug("that \(request.cacheKey) is missing was not stored: \(error)")
        }
    }

    /// The book's `store(image:forKey:)`: keeps `image` in memory, forgets a failure remembered
    /// for `key`, and writes it to disk as an answer's write is (within the disk-write limit,
    /// counted by ``flush()``); returns once it is written.
    public func store(image: Image, forKey key: String) async {
        machine.forgetFailure(key)
        io.memory.insert(image, forKey: key)
        guard let disk = await usableDisk() else { return }
        await store(image, forKey: key, to: disk, flight: machine.makeID(), priority: .normal)
    }

    /// What memory, else the disk, holds under `key`, as stored: a peek, not an answer. No
    /// freshness judged, nothing fetched, no hit counted (``answerFromMemory(_:)`` answers a
    /// request from memory; ``image(for:)`` loads it).
    public func storedImage(forKey key: String) async -> Image? {
        if let image = io.memory.peek(key) { return image }
        guard let disk = await usableDisk(), case let .image(image)? = await io.readEntry(key, from: disk) else { return nil }
        return image
    }

    /// Removes `key` from memory and disk, and forgets its remembered failure.
    public func removeEntry(forKey key: String) async {
        machine.forgetFailure(key)
        io.memory.remove(forKey: key)
        if let disk = await usableDisk() { await io.remove(key, from: disk) }
    }

    /// The book's `clear()`: empties memory and the disk and forgets remembered failures;
    /// flights under way go on. (``clearMemory()`` leaves the disk, ``clearDisk()`` memory.)
    public func clear() async {
        clearMemory()
        await clearDisk()
    }

    /// Empties the disk; memory, remembered failures and flights under way stay.
    public func clearDisk() async {
        if let disk = await usableDisk() { await io.removeAll(from: disk) }
    }

    /// Empties memory and forgets remembered failures; the disk and flights under way stay.
    public func clearMemory() {
        io.memory.removeAll()
        machine.forgetFailures()
    }

    /// Forgets the failure remembered for `key`, so the next request tries again.
    public func forgetFailure(forKey key: String) {
        machine.forgetFailure(key)
    }
}
