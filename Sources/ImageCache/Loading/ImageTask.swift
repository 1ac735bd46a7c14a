import Synchronization

/// A running load whose priority can change and which can be cancelled, as Nuke's `ImageTask`.
/// Made by ``ImagePipeline/imageTask(with:)``. `Sendable`: its priority is behind a mutex, and
/// the pipeline applies the latest one on its actor.
public final class ImageTask: Sendable, Hashable {
    /// What is being loaded.
    public let request: ImageRequest
    private let pipeline: ImagePipeline
    private let task: Task<ImageResponse, any Error>
    /// The task's priority, and its node in the pipeline's bookkeeping once it has one.
    private let state: State

    /// The task's priority, and its node in the pipeline's bookkeeping once it has one.
    private final class State: Sendable {
        let value: Mutex<(priority: ImageRequest.Priority, node: ImagePipeline.Machine.TaskID?)>
        init(_ priority: ImageRequest.Priority) { value = Mutex((priority, nil)) }
    }

    init(request: ImageRequest, pipeline: ImagePipeline, countsHits: Bool, wantsMemory: Bool) {
        self.request = request
        self.pipeline = pipeline
        let state = State(request.priority)
        self.state = state
        // The front door's one look: a memory hit (or a request never to be answered) needs no
        // node and no queue.
        let stale: Image?, generation: UInt64
        switch Result(catching: { () throws(ImagePipeline.Error) in try pipeline.look(request, countingHit: countsHits) }) {
        case let .success(.answered(response)):
            task = Task { response }
            return
        case let .failure(error):
            task = Task { throw error }
            return
        case let .success(.load(entry, seen)):
            (stale, generation) = (entry, seen)
        }
        task = Task { @ImageDatabase in
            let node = pipeline.machine.makeTask(state.value.withLock { $0.priority })
            state.value.withLock { $0.node = node }
            defer { pipeline.machine.removeTask(node) }
            let caller = ImagePipeline.Caller(asker: .task(node), countsHits: countsHits, wantsMemory: wantsMemory)
            return try await pipeline.load(request, stale: stale, lookedAt: generation, as: caller)
        }
    }

    /// The image, once loaded.
    /// - Throws: what the load threw; `CancellationError` once cancelled.
    public var image: Image {
        get async throws { try await task.value.image }
    }

    /// The image and where it came from, once loaded.
    public var response: ImageResponse {
        get async throws { try await task.value }
    }

    /// The task's priority: raising it moves the work it waits for (its flight, and the
    /// original a variant waits for) ahead in every stage's queue.
    public var priority: ImageRequest.Priority {
        get { state.value.withLock { $0.priority } }
        set {
            state.value.withLock { $0.priority = newValue }
            // The actor applies the newest value whenever it runs: two setters racing leave the
            // task and the bookkeeping at the same priority.
            Task { @ImageDatabase [pipeline, state] in
                let (priority, node) = state.value.withLock { ($0.priority, $0.node) }
                guard let node else { return }
                pipeline.machine.setPriority(priority, ofTask: node)
                pipeline.priorityMayHaveRisen()
            }
        }
    }

    /// Cancels the load: its waiter returns at once; the work stops once nobody waits for it.
    public func cancel() { task.cancel() }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { task.isCancelled }

    public static func == (lhs: ImageTask, rhs: ImageTask) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
