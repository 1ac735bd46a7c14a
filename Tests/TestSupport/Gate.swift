import Synchronization

/// A gate that tasks wait at until the test opens it: the way to hold work at a known point
/// without sleeping. A waiting task that is cancelled leaves at once with `CancellationError`.
/// Thread-safe.
public final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiting = WaitList<Void, any Error>()
    }

    private let state = Mutex(State())

    public init() {}

    /// Tasks waiting now.
    public var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Returns once the gate is open.
    public func pass() async throws {
        let id = state.withLock { $0.waiting.reserve() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, CancellationError>? in
                    if state.isOpen { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiting.add(id, waitingFor: (), continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            state.withLock { $0.waiting.remove(id) }?.resume(throwing: CancellationError())
        }
    }

    /// Lets every waiting and every later task through.
    public func open() {
        let waiting = state.withLock { state in
            state.isOpen = true
            return state.waiting.removeAll { _ in true }
        }
        for waiter in waiting { waiter.continuation.resume() }
    }
}
