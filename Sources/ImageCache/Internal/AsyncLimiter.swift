import Synchronization

/// At most `limit` operations at once; the rest wait in arrival order, without a thread each.
/// A waiter whose task is cancelled leaves the queue at once with `CancellationError`.
///
/// Thread-safe: its state sits behind a `Mutex`.
final class AsyncLimiter: Sendable {
    private struct State {
        var running = 0
        var nextID = 0
        var queue: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Runs `operation` once fewer than `limit` others run.
    func run<T>(_ operation: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await operation()
    }

    private func acquire() async throws {
        let id: Int? = state.withLock { state in
            if state.running < limit, state.queue.isEmpty {
                state.running += 1
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, CancellationError>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.running < limit, state.queue.isEmpty {
                        state.running += 1
                        return .success(())
                    }
                    state.queue.append((id, continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                state.queue.firstIndex { $0.id == id }.map { state.queue.remove(at: $0).continuation }
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Hands the slot to the first waiter, or frees it.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.queue.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.queue.removeFirst().continuation
        }
        next?.resume()
    }
}
