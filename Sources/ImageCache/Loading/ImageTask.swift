import Synchronization

/// One running load, with a handle to change its ``priority`` while it waits or to cancel it
/// (after Nuke's `ImageTask`).
///
/// ```swift
/// let task = database.imageTask(with: request)   // starts at once, at request.priority
/// task.priority = .high                         // the person opened it: move it up
/// let image = try await task.image
/// ```
///
/// The work a task waits for may be shared with other callers (one download for every waiter of
/// a key): it runs at the highest priority among them, so raising one task's priority moves the
/// shared work, and lowering it never drops the work below another waiter's priority. Cancelling
/// the task makes ``image`` throw `CancellationError` at once; the work stops when no other
/// caller waits for it, and queued work leaves its queue without starting.
///
/// Thread-safe: the priority is kept behind this task's lock and set in the pipeline's
/// bookkeeping (behind its lock) in the same step.
public final class ImageTask: Sendable, Hashable {
    /// What this task loads.
    public let request: ImageRequest
    private let pipeline: ImagePipeline
    /// Its node in the pipeline's bookkeeping; `nil` when memory answered at once.
    private let node: ImagePipeline.Machine.TaskID?
    private let task: Task<Image, any Error>
    /// The priority as last set, which the pipeline's bookkeeping follows while the task runs.
    private let ownPriority: Mutex<ImageRequest.Priority>

    init(request: ImageRequest, pipeline: ImagePipeline, countsHits: Bool, wantsMemory: Bool) {
        self.request = request
        self.pipeline = pipeline
        ownPriority = Mutex(request.priority)
        // A memory hit is answered without a node or a queue.
        if case let .answered(image) = pipeline.memoryLookup(request, countingHit: countsHits) {
            node = nil
            task = Task { image }
            return
        }
        let node = pipeline.makeTask(request.priority)
        self.node = node
        let caller = ImagePipeline.Caller(asker: .task(node), countsHits: countsHits, wantsMemory: wantsMemory)
        task = Task {
            defer { pipeline.removeTask(node) }
            return try await pipeline.image(for: request, as: caller)
        }
    }

    /// The image, once loaded.
    /// - Throws: what the load failed with; `CancellationError` after ``cancel()``.
    public var image: Image {
        get async throws { try await task.value }
    }

    /// This task's priority. Changing it reorders the queued work the task waits for; a task
    /// that has finished ignores it.
    public var priority: ImageRequest.Priority {
        get { ownPriority.withLock { $0 } }
        set {
            // One step: two setters racing leave this task and the bookkeeping at the same
            // priority (the bookkeeping's lock never waits for this one).
            ownPriority.withLock { priority in
                priority = newValue
                if let node { pipeline.setPriority(newValue, ofTask: node) }
            }
        }
    }

    /// Cancels the load: ``image`` throws `CancellationError`.
    public func cancel() { task.cancel() }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { task.isCancelled }

    public static func == (lhs: ImageTask, rhs: ImageTask) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
