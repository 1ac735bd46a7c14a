import Synchronization

/// A counter that any number of listeners can follow as an `AsyncStream<Int>`: each new stream
/// starts with the current value, then gets every change (only the newest when a listener lags).
/// Thread-safe (a `Mutex`); increments never suspend.
final class LiveCounter: Sendable {
    private struct State {
        var value = 0
        var nextID = 0
        var listeners: [Int: AsyncStream<Int>.Continuation] = [:]
    }

    private let state = Mutex(State())

    var value: Int { state.withLock { $0.value } }

    func increment(by amount: Int = 1) {
        state.withLock { state in
            state.value += amount
            for listener in state.listeners.values { listener.yield(state.value) }
        }
    }

    /// A new stream of this counter's values, starting with the current one.
    func stream() -> AsyncStream<Int> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.listeners[id] = continuation
            continuation.yield(state.value)
            return id
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    deinit {
        state.withLock { state in
            for listener in state.listeners.values { listener.finish() }
        }
    }
}
