/// The limited stages: a slot is taken on the actor, the work runs off it, and the slot is
/// given back on the actor, which starts the next waiting work of the highest priority.
extension ImagePipeline {
    typealias Stage = Machine.Stage

    /// Runs `operation` within `stage`'s limit (per host too, for downloads), waiting in the
    /// stage's queue, by the flight's priority, while the stage is at its limit.
    /// - Throws: ``Error/tooBusy(stage:waited:)`` when the queue refuses or the deadline passes;
    ///   `CancellationError`.
    func inSlot<T: Sendable>(
        _ stage: Stage, for id: FlightID, host: String? = nil, priority: ImageRequest.Priority? = nil,
        _ operation: () async throws -> T
    ) async throws -> T {
        let slot = try await acquire(stage, for: id, host: host, priority: priority)
        defer { release(stage, host: host, slot: slot) }
        try Task.checkCancellation()
        return try await operation()
    }

    /// Takes a slot of `stage` for flight `flight`, waiting in its queue if need be.
    /// - Returns: the slot's id, to give back to ``release(_:host:slot:)``.
    private func acquire(_ stage: Stage, for flight: FlightID, host: String?, priority: ImageRequest.Priority?) async throws -> Machine.EntryID {
        let id = machine.makeID()
        let background = (machine.priority(ofFlight: flight) ?? priority ?? .normal).isBackground
        if machine.tryStart(stage, host: host, slot: id, background: background) {
            changed()
            return id
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Handles.SlotWaiter) in
                if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                let (action, refused) = machine.enqueue(stage, id: id, flight: flight, host: host, waiter: continuation, priority: priority)
                if let refused {
                    refused.deadline?.cancel()
                    refused.waiter.resume(throwing: ImagePipeline.Error.tooBusy(stage: stage.description, waited: nil))
                }
                switch action {
                case .start: continuation.resume()
                case .refused: continuation.resume(throwing: ImagePipeline.Error.tooBusy(stage: stage.description, waited: nil))
                case .waiting(overCapacity: true): startDeadline(stage, id: id)
                case .waiting(overCapacity: false): break
                }
                changed()
            }
        } onCancel: {
            Task { @ImageDatabase in self.leave(stage, id: id) }
        }
        return id
    }

    private func leave(_ stage: Stage, id: Machine.EntryID) {
        guard let entry = machine.leave(stage, id: id) else { return }
        entry.deadline?.cancel()
        entry.waiter.resume(throwing: CancellationError())
        changed()
    }

    private func release(_ stage: Stage, host: String?, slot: Machine.EntryID) {
        resume(machine.release(stage, host: host, slot: slot))
    }

    /// A flight's priority may have risen: queued work it has may start now on a processor kept
    /// from background work (``Limits/backgroundProcessing``).
    func priorityMayHaveRisen() {
        resume(machine.startPromoted())
    }

    private func resume(_ started: [Machine.Entry]) {
        for entry in started {
            entry.deadline?.cancel()
            entry.waiter.resume()
        }
        changed()
    }

    /// Work queued beyond the stage's capacity fails after the interactive deadline.
    private func startDeadline(_ stage: Stage, id: Machine.EntryID) {
        let deadline = io.configuration.limits.interactiveDeadline
        // Weak: a pending deadline does not keep the pipeline alive (cancelling it resumes nobody).
        let timer = Task { [weak self, clock] in
            try? await clock.sleep(deadline)
            guard !Task.isCancelled, let self, let waiter = self.machine.expire(stage, id: id) else { return }
            waiter.resume(throwing: ImagePipeline.Error.tooBusy(stage: stage.description, waited: deadline))
            self.changed()
        }
        if !machine.setDeadline(timer, stage: stage, id: id) { timer.cancel() }
    }

    // MARK: - Originals waiting for processing

    /// Counts `bytes` of an original as waiting for processing while `operation` runs:
    /// downloads pause while too many wait.
    func holdingOriginal<T: Sendable>(bytes: Int, _ operation: () async throws -> T) async throws -> T {
        machine.holdOriginal(bytes: bytes)
        defer { resume(machine.releaseOriginal(bytes: bytes)) }
        return try await operation()
    }

    // MARK: - Following

    /// After every change of the bookkeeping: the followers of ``SchedulingStats`` get the new
    /// figures; with nobody following, nothing happens.
    func changed() {
        guard !followers.isEmpty else { return }
        let stats = schedulingStats
        for follower in followers.values { follower.yield(stats) }
    }

    /// The stages' figures now.
    public var schedulingStats: SchedulingStats { machine.stats }

    /// The stages' figures, again after every change (the newest only, to a slow follower).
    public var onSchedulingChange: AsyncStream<SchedulingStats> {
        let (stream, continuation) = AsyncStream.makeStream(of: SchedulingStats.self, bufferingPolicy: .bufferingNewest(1))
        let id = machine.makeID()
        followers[id] = continuation
        continuation.yield(schedulingStats)
        continuation.onTermination = { [weak self] _ in
            Task { @ImageDatabase in self?.followers[id] = nil }
        }
        return stream
    }
}
