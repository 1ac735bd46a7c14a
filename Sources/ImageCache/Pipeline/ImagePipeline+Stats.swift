/// The pipeline's counts and sizes.
extension ImagePipeline {
    /// A snapshot of what the pipeline has done and holds.
    public struct Stats: Sendable, Hashable, Codable {
        /// Lookups answered from memory.
        public var memoryHits: Int
        /// Lookups answered from disk.
        public var diskHits: Int
        /// Requests sent to the origin, conditional ones included. Each ends as exactly one of
        /// ``downloads``, ``revalidations``, ``missingAnswers``, ``errorAnswers`` or
        /// ``unanswered``, so those add up to it once no request is under way.
        public var originFetches: Int
        /// Origin answers with a body (2xx): bytes that were downloaded.
        public var downloads: Int
        /// Conditional requests the origin answered 304: the entry was current, no body came.
        public var revalidations: Int
        /// Origin answers 404 or 410: the origin does not have the image.
        public var missingAnswers: Int
        /// Other origin answers that gave no image: another status (5xx, 403, ...), or a body
        /// over the limit.
        public var errorAnswers: Int
        /// Origin requests that got no answer: refused, timed out, broken or cancelled.
        public var unanswered: Int
        /// Lookups answered "missing" from a stored 404 or 410, without asking the origin
        /// (offline, or while that answer is fresh).
        public var knownMissing: Int
        /// Conditional requests the origin answered with new bytes.
        public var refreshed: Int
        /// Stale entries answered: inside `stale-while-revalidate`, or because the origin failed.
        public var staleAnswers: Int
        /// Callers that joined a download already in flight.
        public var coalesced: Int
        /// Loads that failed (each failure is remembered until its expiry).
        public var failures: Int
        /// Disk entries that failed their integrity check and were deleted.
        public var corruptEntries: Int
        /// Disk operations that failed (unwritable directory, full disk).
        public var diskFailures: Int
        /// Images in memory.
        public var memoryEntries: Int
        /// Bytes in memory.
        public var memoryBytes: Int
        /// Entries on disk.
        public var diskEntries: Int
        /// Bytes on disk.
        public var diskBytes: Int
        /// Whether the disk tier is in use.
        public var diskAvailable: Bool
        /// What each stage runs and queues, with its high-water marks, refusals and time-outs.
        public var scheduling: SchedulingStats
        /// Images answered and not yet written to disk (held in memory until written).
        public var pendingWrites: Int
        /// The bytes of ``pendingWrites``.
        public var pendingWriteBytes: Int
        /// The most bytes that waited for their disk writes at once.
        public var maxPendingWriteBytes: Int
    }

    /// The current counts and sizes.
    public func stats() -> Stats {
        let memory = io.memory.usage
        let writing = io.memory.heldForWrites
        let disk = io.disk?.usage ?? (entries: 0, bytes: 0)
        return Stats(
            memoryHits: io.memory.hits.value,
            diskHits: io.counters.diskHits.value,
            originFetches: io.counters.originFetches.value,
            downloads: io.counters.downloads.value,
            revalidations: io.counters.revalidations.value,
            missingAnswers: io.counters.missingAnswers.value,
            errorAnswers: io.counters.errorAnswers.value,
            unanswered: io.counters.unanswered.value,
            knownMissing: io.counters.knownMissing.value,
            refreshed: io.counters.refreshed.value,
            staleAnswers: io.counters.staleAnswers.value,
            coalesced: io.counters.coalesced.value,
            failures: io.counters.failures.value,
            corruptEntries: io.counters.corruptEntries.value,
            diskFailures: io.counters.diskFailures.value,
            memoryEntries: memory.count,
            memoryBytes: memory.bytes,
            diskEntries: disk.entries,
            diskBytes: disk.bytes,
            diskAvailable: io.readyDisk != nil,
            scheduling: schedulingStats,
            pendingWrites: writing.writes,
            pendingWriteBytes: writing.bytes,
            maxPendingWriteBytes: writing.maxBytes
        )
    }
}
