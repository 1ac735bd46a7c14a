public import Foundation

extension ImagePipeline {
    /// How much of each kind of work a pipeline runs at once, and how long work may queue.
    ///
    /// Each costly stage of a request has a limit; work beyond it waits in that stage's queue,
    /// highest ``ImageRequest/Priority`` first, and nothing is started just to wait:
    ///
    /// | stage | runs on | default |
    /// |---|---|---|
    /// | origin downloads | AsyncHTTPClient's event loops | 8 in total, 6 per host |
    /// | processing (decode, resize, encode; hashing of large payloads) | the pipeline's own worker threads | one per core; background work at most one fewer |
    /// | disk reads (with the integrity checks) | Swift's global executor, off the actor | half the cores, at least 1 |
    /// | disk writes (with `fsync`) | the pipeline's own I/O threads | 2 |
    ///
    /// Swift's cooperative threads never run a processor or wait for `fsync`, so request handling,
    /// memory hits and event streams stay responsive while the processing threads are all busy.
    public struct Limits: Sendable, Hashable {
        /// Origin requests at once, all hosts together.
        public var downloads: Int
        /// Origin requests at once to one host (scheme, host and port). With
        /// ``HTTPImageFetcher/defaultClient``, keep it at 8 or below: that client opens at most 8
        /// connections to a host, and a request waiting inside it for a connection fails once
        /// the connect timeout (10 s) passes, where the pipeline's own queue would have waited.
        public var downloadsPerHost: Int
        /// Processors running at once; also the number of worker threads.
        public var processing: Int
        /// Processors running background work (below ``ImageRequest/Priority/normal``: prefetches,
        /// better formats made ahead, refreshes) at once: by default one fewer than
        /// ``processing`` (at least 1: on one core background work may take the one), so with two
        /// or more a request somebody waits for finds a processor within one image's time however
        /// much background work is queued. A slot counts as background by the priority its work
        /// started with.
        public var backgroundProcessing: Int
        /// Disk reads at once.
        public var diskReads: Int
        /// Disk writes at once; also the number of I/O threads.
        public var diskWrites: Int
        /// Bytes of originals that have arrived and wait for their variant to be processed. While
        /// the total is over it, no new download starts: downloads cannot run ahead of processing
        /// without bound.
        public var waitingOriginalBytes: Int
        /// Entries each stage's queue holds. When a queue is full, background work (below
        /// ``ImageRequest/Priority/normal``) is refused, lowest priority first; other work is
        /// still queued, but fails if it has not started within ``interactiveDeadline``.
        public var queueCapacity: Int
        /// How long work queued beyond ``queueCapacity`` waits before it fails with
        /// ``ImagePipeline/Error/tooBusy(stage:waited:)``. Measured on the pipeline's clock.
        public var interactiveDeadline: Duration
        /// Bytes of images answered and waiting for their disk write. Answers do not wait for
        /// the disk; beyond this, a flight's answer waits for its own write, so writes cannot
        /// fall behind without bound.
        public var pendingWriteBytes: Int

        /// Creates limits; the defaults suit one machine's cores.
        public init(
            downloads: Int = 8,
            downloadsPerHost: Int = 6,
            processing: Int = ProcessInfo.processInfo.activeProcessorCount,
            backgroundProcessing: Int? = nil,
            diskReads: Int = max(1, ProcessInfo.processInfo.activeProcessorCount / 2),
            diskWrites: Int = 2,
            waitingOriginalBytes: Int = 64 * 1024 * 1024,
            queueCapacity: Int = 2000,
            interactiveDeadline: Duration = .seconds(30),
            pendingWriteBytes: Int = 64 * 1024 * 1024
        ) {
            self.downloads = max(1, downloads)
            self.downloadsPerHost = max(1, downloadsPerHost)
            self.processing = max(1, processing)
            self.backgroundProcessing = min(self.processing, max(1, backgroundProcessing ?? self.processing - 1))
            self.diskReads = max(1, diskReads)
            self.diskWrites = max(1, diskWrites)
            self.waitingOriginalBytes = max(1, waitingOriginalBytes)
            self.queueCapacity = max(1, queueCapacity)
            self.interactiveDeadline = interactiveDeadline
            self.pendingWriteBytes = max(0, pendingWriteBytes)
        }

        /// The background limit of `stage`: only processing has one below its limit.
        func background<Handles>(_ stage: PipelineStateMachine<Handles>.Stage) -> Int {
            stage == .processing ? backgroundProcessing : running(stage)
        }

        /// The limit of `stage`.
        func running<Handles>(_ stage: PipelineStateMachine<Handles>.Stage) -> Int {
            switch stage {
            case .diskRead: diskReads
            case .download: downloads
            case .processing: processing
            case .diskWrite: diskWrites
            }
        }
    }
}

