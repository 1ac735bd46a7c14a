import Foundation

/// What each stage of a pipeline runs and queues now, and the most it ever did: the numbers
/// behind ``ImagePipeline/Limits``.
public struct SchedulingStats: Sendable, Hashable, Codable {
    /// One stage's counts.
    public struct Stage: Sendable, Hashable, Codable {
        /// Work allowed to run at once.
        public var limit: Int
        /// Work running now.
        public var running: Int
        /// Slots background work (below ``ImageRequest/Priority/normal``) may hold at once.
        public var backgroundLimit: Int
        /// Background work running now.
        public var backgroundRunning: Int
        /// The most background work that ever ran at once.
        public var maxBackgroundRunning: Int
        /// Work waiting now.
        public var queued: Int
        /// The most work that ever ran at once (high-water mark).
        public var maxRunning: Int
        /// The longest the queue ever was.
        public var maxQueued: Int
        /// Work started so far.
        public var started: Int
        /// Work that had to wait in the queue before it started (or left).
        public var waited: Int
        /// Background work refused because the queue was full.
        public var refused: Int
        /// Work that waited past the interactive deadline and failed.
        public var timedOut: Int

        /// An idle stage with `limit`.
        public init(limit: Int) {
            self.limit = limit
            running = 0
            backgroundLimit = limit
            backgroundRunning = 0
            maxBackgroundRunning = 0
            queued = 0
            maxRunning = 0
            maxQueued = 0
            started = 0
            waited = 0
            refused = 0
            timedOut = 0
        }
    }

    /// Origin requests.
    public var downloads: Stage
    /// Processors.
    public var processing: Stage
    /// Disk reads.
    public var diskReads: Stage
    /// Disk writes.
    public var diskWrites: Stage
    /// The most origin requests that ever ran at once to one host.
    public var maxDownloadsOnOneHost: Int
    /// Bytes of originals waiting for their variant to be processed now.
    public var waitingOriginalBytes: Int
    /// The most such bytes there ever were.
    public var maxWaitingOriginalBytes: Int
}
