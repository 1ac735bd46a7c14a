import Clocks
import Synchronization

/// Runs the pipeline's costly work within ``ImageLoader/Limits``: each stage's work waits for a
/// slot in that stage's queue, highest priority first, and a full queue refuses background work.
/// The decisions are `SchedulingStateMachine`'s; this type holds it behind a `Mutex`, parks the
/// waiting tasks as continuations, and runs the deadlines on the loader's clock.
///
/// Thread-safe. A stage with a free slot and an empty queue costs one lock and no suspension.
final class Scheduler: Sendable {
    typealias Machine = SchedulingStateMachine<CheckedContinuation<Void, any Error>>
    typealias Stage = Machine.Stage
    typealias Node = Machine.Node

    let limits: ImageLoader.Limits
    private let machine: Mutex<Machine>
    private let clock: AnyClock<Duration>
    /// Deadlines of work queued beyond the capacity, by entry.
    private let deadlines = Mutex<[Machine.EntryID: Task<Void, Never>]>([:])
    /// Bumped after every change while anybody follows it (see ``changeStream()``).
    private let changes = LiveValue(0)
    /// Streams of ``changes`` open now: with none, a change costs no lock.
    private let followers = Atomic<Int>(0)

    init(limits: ImageLoader.Limits, clock: AnyClock<Duration>) {
        self.limits = limits
        self.clock = clock
        machine = Mutex(Machine(limits: .init(
            running: [
                .diskRead: limits.diskReads, .download: limits.downloads, .processing: limits.processing,
                .diskWrite: limits.diskWrites,
            ],
            downloadsPerHost: limits.downloadsPerHost, waitingOriginalBytes: limits.waitingOriginalBytes,
            queueCapacity: limits.queueCapacity
        )))
    }

    // MARK: - Priorities

    /// A caller node with `priority`; remove it with ``removeCaller(_:)`` when done.
    func makeCaller(_ priority: ImageRequest.Priority) -> Node {
        machine.withLock { $0.makeCaller(priority) }
    }

    func removeCaller(_ caller: Node) {
        machine.withLock { $0.removeCaller(caller) }
    }

    func setPriority(_ priority: ImageRequest.Priority, of caller: Node) {
        machine.withLock { $0.setPriority(priority, of: caller) }
        changed()
    }

    func priority(of node: Node) -> ImageRequest.Priority? {
        machine.withLock { $0.priority(of: node) }
    }

    /// One caller attached to one flight, to detach when it stops waiting.
    struct Attachment {
        let input: Node
        let flight: Node
        /// The caller had a fixed priority: its node was made for this attachment.
        let madeNode: Bool
        let wantsMemory: Bool
    }

    /// Attaches `caller` to `flight`: its own node, or, for a fixed priority, a node made for it.
    func attach(_ caller: ImagePipeline.Caller, to flight: Node) -> Attachment {
        let input = machine.withLock { machine in
            let input = caller.node ?? machine.makeCaller(caller.priority)
            machine.attach(input, to: flight, wantsMemory: caller.wantsMemory)
            return input
        }
        changed()  // the flight's priority may have risen
        return Attachment(input: input, flight: flight, madeNode: caller.node == nil, wantsMemory: caller.wantsMemory)
    }

    func detach(_ attachment: Attachment) {
        machine.withLock { machine in
            machine.detach(attachment.input, from: attachment.flight, wantedMemory: attachment.wantsMemory)
            if attachment.madeNode { machine.removeCaller(attachment.input) }
        }
    }

    func wantsMemory(_ flight: Node) -> Bool {
        machine.withLock { $0.wantsMemory(flight) }
    }

    // MARK: - Running

    /// Runs `operation` once `stage` has a slot for `node`'s work, and frees the slot after.
    /// - Throws: `CancellationError` when the task is cancelled while it waits (it leaves the
    ///   queue at once); ``ImageLoader/Error/tooBusy(stage:waited:)`` when the queue refuses it
    ///   or its deadline passes; whatever `operation` throws.
    func run<T>(
        _ stage: Stage, for node: Node, host: String? = nil, _ operation: () async throws -> T
    ) async throws -> T {
        try await run(stage, host: host, queueingFor: { node }, operation)
    }

    /// ``run(_:for:host:_:)`` with the node asked for only when the work has to queue: a free
    /// slot costs no priority bookkeeping (the leader's disk read).
    func run<T>(
        _ stage: Stage, host: String? = nil, queueingFor node: () -> Node, _ operation: () async throws -> T
    ) async throws -> T {
        try await acquire(stage, node: node, host: host)
        defer { release(stage, host: host) }
        try Task.checkCancellation()
        return try await operation()
    }

    private func acquire(_ stage: Stage, node makeNode: () -> Node, host: String?) async throws {
        let id: Machine.EntryID? = machine.withLock { machine in
            machine.tryStart(stage, host: host) ? nil : machine.makeID()
        }
        guard let id else { return changed() }
        let node = makeNode()
        defer { endDeadline(id) }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (action, refused) = machine.withLock { machine -> (Machine.EnqueueAction?, CheckedContinuation<Void, any Error>?) in
                    if Task.isCancelled { return (nil, nil) }
                    return machine.enqueue(stage, id: id, node: node, host: host, waiter: continuation)
                }
                refused?.resume(throwing: ImageLoader.Error.tooBusy(stage: stage.description, waited: nil))
                switch action {
                case nil: continuation.resume(throwing: CancellationError())
                case .start: continuation.resume()
                case .refused: continuation.resume(throwing: ImageLoader.Error.tooBusy(stage: stage.description, waited: nil))
                case .waiting(overCapacity: true): startDeadline(stage, id: id)
                case .waiting(overCapacity: false): changed()
                }
            }
        } onCancel: {
            machine.withLock { $0.cancel(stage, id: id) }?.resume(throwing: CancellationError())
            changed()
        }
        changed()
    }

    private func release(_ stage: Stage, host: String?) {
        let started = machine.withLock { $0.release(stage, host: host) }
        for waiter in started { waiter.resume() }
        changed()
    }

    /// Fails entry `id` if it has not started within the interactive deadline.
    private func startDeadline(_ stage: Stage, id: Machine.EntryID) {
        let deadline = limits.interactiveDeadline
        let task = Task { [clock] in
            try? await clock.sleep(for: deadline)
            self.deadlines.withLock { _ = $0.removeValue(forKey: id) }
            guard !Task.isCancelled, let waiter = self.machine.withLock({ $0.expire(stage, id: id) }) else { return }
            waiter.resume(throwing: ImageLoader.Error.tooBusy(stage: stage.description, waited: deadline))
        }
        deadlines.withLock { $0[id] = task }
        // It may have started (or left) before the deadline was stored.
        if !machine.withLock({ $0.isQueued(stage, id: id) }) { endDeadline(id) }
        changed()
    }

    /// Cancels the deadline of entry `id`, which started or left.
    private func endDeadline(_ id: Machine.EntryID) {
        deadlines.withLock { $0.removeValue(forKey: id) }?.cancel()
    }

    // MARK: - Originals waiting for processing

    /// Runs `operation` (processing a variant) while `bytes` of its original count against
    /// ``ImageLoader/Limits/waitingOriginalBytes``: downloads wait while the total is over it.
    func holdingOriginal<T>(bytes: Int, _ operation: () async throws -> T) async throws -> T {
        machine.withLock { $0.holdOriginal(bytes: bytes) }
        defer {
            let started = machine.withLock { $0.releaseOriginal(bytes: bytes) }
            for waiter in started { waiter.resume() }
            changed()
        }
        return try await operation()
    }

    // MARK: - Following

    /// Says that something changed, to the streams that follow.
    private func changed() {
        if followers.load(ordering: .relaxed) > 0 { changes.increment() }
    }

    /// A stream that yields after each change (a start, a wait, a finish, a refusal, a priority
    /// change); it starts with one value at once.
    func changeStream() -> AsyncStream<Int> {
        followers.add(1, ordering: .relaxed)
        let upstream = changes.stream()
        return AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let task = Task {
                for await value in upstream { continuation.yield(value) }
                continuation.finish()
            }
            continuation.onTermination = { [weak self] _ in
                task.cancel()
                self?.followers.subtract(1, ordering: .relaxed)
            }
        }
    }

    // MARK: - Reading

    /// The counts of every stage.
    var stats: SchedulingStats { machine.withLock { $0.stats } }

    /// The nodes queued in `stage` in the order they would start (tests).
    func startOrder(_ stage: Stage) -> [Node] { machine.withLock { $0.startOrder(stage) } }
}
