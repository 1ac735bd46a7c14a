import Clocks
import Synchronization

/// Running the pipeline's costly work within ``ImagePipeline/Limits``: each stage's work waits for
/// a slot in that stage's queue, highest priority first, and a full queue refuses background
/// work. The decisions are the bookkeeping's (`PipelineStateMachine+Stages.swift`); this parks
/// the waiting tasks as continuations and runs the deadlines on the loader's clock. A stage with
/// a free slot and an empty queue costs one lock and no suspension.
extension ImagePipeline {
    typealias Stage = Machine.Stage

    /// Runs `operation` once `stage` has a slot for the work of flight `id`, and frees the slot
    /// after.
    /// - Throws: `CancellationError` when the task is cancelled while it waits (it leaves the
    ///   queue at once); ``ImagePipeline/Error/tooBusy(stage:waited:)`` when the queue refuses it
    ///   or its deadline passes; whatever `operation` throws.
    func run<T>(_ stage: Stage, for id: FlightID, host: String? = nil, _ operation: () async throws -> T) async throws -> T {
        try await acquire(stage, for: id, host: host)
        defer { release(stage, host: host) }
        try Task.checkCancellation()
        return try await operation()
    }

    private func acquire(_ stage: Stage, for flight: FlightID, host: String?) async throws {
        let id: Machine.EntryID? = bookkeeping.withLock { machine in
            machine.tryStart(stage, host: host) ? nil : machine.makeID()
        }
        guard let id else { return changed() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Swift.Error>) in
                let (action, refused) = bookkeeping.withLock { machine -> (Machine.EnqueueAction?, Machine.Entry?) in
                    if Task.isCancelled { return (nil, nil) }
                    return machine.enqueue(stage, id: id, flight: flight, host: host, waiter: continuation)
                }
                if let refused {
                    refused.deadline?.cancel()
                    refused.waiter.resume(throwing: ImagePipeline.Error.tooBusy(stage: stage.description, waited: nil))
                }
                switch action {
                case nil: continuation.resume(throwing: CancellationError())
                case .start: continuation.resume()
                case .refused: continuation.resume(throwing: ImagePipeline.Error.tooBusy(stage: stage.description, waited: nil))
                case .waiting(overCapacity: true): startDeadline(stage, id: id)
                case .waiting(overCapacity: false): changed()
                }
            }
        } onCancel: {
            if let entry = bookkeeping.withLock({ $0.leave(stage, id: id) }) {
                entry.deadline?.cancel()
                entry.waiter.resume(throwing: CancellationError())
            }
            changed()
        }
        changed()
    }

    private func release(_ stage: Stage, host: String?) {
        resume(bookkeeping.withLock { $0.release(stage, host: host) })
    }

    /// Resumes entries that were given a slot.
    private func resume(_ started: [Machine.Entry]) {
        for entry in started {
            entry.deadline?.cancel()
            entry.waiter.resume()
        }
        changed()
    }

    /// Fails entry `id` if it has not started within the interactive deadline.
    private func startDeadline(_ stage: Stage, id: Machine.EntryID) {
        let deadline = configuration.limits.interactiveDeadline
        // Weak: a pending deadline does not keep the pipeline alive (cancelling it resumes nobody).
        let timer = Task { [weak self, clock] in
            try? await clock.sleep(for: deadline)
            guard !Task.isCancelled, let self, let waiter = self.bookkeeping.withLock({ $0.expire(stage, id: id) }) else { return }
            waiter.resume(throwing: ImagePipeline.Error.tooBusy(stage: stage.description, waited: deadline))
            self.changed()
        }
        // It may have started (or left) before the deadline was kept.
        if !bookkeeping.withLock({ $0.setDeadline(timer, stage: stage, id: id) }) { timer.cancel() }
        changed()
    }

    // MARK: - Originals waiting for processing

    /// Runs `operation` (processing a variant) while `bytes` of its original count against
    /// ``ImagePipeline/Limits/waitingOriginalBytes``: downloads wait while the total is over it.
    func holdingOriginal<T>(bytes: Int, _ operation: () async throws -> T) async throws -> T {
        bookkeeping.withLock { $0.holdOriginal(bytes: bytes) }
        defer { resume(bookkeeping.withLock { $0.releaseOriginal(bytes: bytes) }) }
        return try await operation()
    }

    // MARK: - Tasks

    /// A node for an ``ImageTask`` at `priority`; remove it with ``removeTask(_:)``.
    func makeTask(_ priority: ImageRequest.Priority) -> Machine.TaskID {
        bookkeeping.withLock { $0.makeTask(priority) }
    }

    func removeTask(_ id: Machine.TaskID) {
        bookkeeping.withLock { $0.removeTask(id) }
    }

    /// Changes a task's priority: the work it waits for moves in its queues.
    func setPriority(_ priority: ImageRequest.Priority, ofTask id: Machine.TaskID) {
        bookkeeping.withLock { $0.setPriority(priority, ofTask: id) }
        changed()
    }

    // MARK: - Following

    /// Says that something changed, to the streams that follow.
    func changed() {
        changes.increment()
    }

    /// A stream that yields after each change (a start, a wait, a finish, a refusal, a priority
    /// change); it starts with one value at once.
    func changeStream() -> AsyncStream<Int> {
        changes.stream()
    }

    /// What each stage runs and queues now, with its high-water marks, refusals and time-outs.
    public var schedulingStats: SchedulingStats { bookkeeping.withLock { $0.stats } }

    /// The scheduling counts now, then after each change (work started, queued, finished,
    /// refused; a priority changed): to watch queues fill and drain without polling. Under load
    /// a slow listener sees only the newest counts.
    public var onSchedulingChange: AsyncStream<SchedulingStats> {
        let changes = changeStream()
        return AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            // Weak: a follower does not keep the pipeline (its memory, its threads) alive.
            let task = Task { [weak self] in
                for await _ in changes {
                    guard let self else { break }
                    continuation.yield(self.schedulingStats)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
