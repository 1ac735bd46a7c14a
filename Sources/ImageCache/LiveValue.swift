import Synchronization

/// A value that any number of listeners can follow as an `AsyncStream`: each new stream starts
/// with the current value, then gets every change (only the newest when a listener lags).
///
/// Thread-safe; updates never suspend. The cache's hit counters are built on it, and apps can
/// use it for their own live state, such as progress.
///
/// Two locks, so a listener is never handed a value while the state lock is held: yielding to a
/// stream can wait for the listening task's own lock, while cancelling that task holds its lock
/// and takes the state lock (to forget the listener). One lock for both would deadlock there.
/// The delivery lock only orders deliveries, so every listener sees the values in order.
public final class LiveValue<Value: Sendable>: Sendable {
    private struct State {
        var value: Value
        var nextID = 0
        var listeners: [Int: AsyncStream<Value>.Continuation] = [:]
    }

    private let state: Mutex<State>
    /// Serialises deliveries; never taken by a stream's termination.
    private let delivery = Mutex(())

    /// Creates a live value starting at `initial`.
    public init(_ initial: Value) {
        state = Mutex(State(value: initial))
    }

    /// The current value.
    public var value: Value { state.withLock { $0.value } }

    /// What `body` reads from the current value, which it sees in place, not copied: for a
    /// small part of a large value.
    public func read<Result>(_ body: (Value) -> Result) -> Result {
        state.withLock { body($0.value) }
    }

    /// Changes the value and sends the result to every listener.
    public func update(_ change: (inout Value) -> Void) {
        // Nobody listens: one lock. A listener that arrives later starts from this value.
        let changed = state.withLock { state in
            guard state.listeners.isEmpty else { return false }
            change(&state.value)
            return true
        }
        if changed { return }
        delivery.withLock { _ in
            let (value, listeners) = state.withLock { state in
                change(&state.value)
                return (state.value, Array(state.listeners.values))
            }
            for listener in listeners { listener.yield(value) }
        }
    }

    /// A new stream of values, starting with the current one. It ends when this value is
    /// deallocated or the listener stops iterating.
    public func stream() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(1))
        let id = delivery.withLock { _ in
            let (id, value) = state.withLock { state in
                let id = state.nextID
                state.nextID += 1
                state.listeners[id] = continuation
                return (id, state.value)
            }
            continuation.yield(value)  // nobody iterates the new stream yet: this only buffers
            return id
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    deinit {
        let listeners = state.withLock { Array($0.listeners.values) }
        for listener in listeners { listener.finish() }
    }
}

/// A live count of events: a ``LiveValue`` of an `Int` that costs one atomic add, and no lock,
/// while nobody follows it. Counts never go down, so a listener sees them rise in order.
///
/// Thread-safe.
final class LiveCounter: Sendable {
    private let count = Atomic<Int>(0)
    /// Streams open now: with none, an increment touches only ``count``.
    private let listeners = Atomic<Int>(0)
    /// What listeners follow; kept up to date only while there are some.
    private let live = LiveValue(0)

    init() {}

    /// The count now.
    var value: Int { count.load(ordering: .sequentiallyConsistent) }

    func increment(by amount: Int = 1) {
        // Added first, then the listeners read: a stream that starts in between reads the new
        // count itself (see stream()), so no increment is lost to it.
        let new = count.add(amount, ordering: .sequentiallyConsistent).newValue
        guard listeners.load(ordering: .sequentiallyConsistent) > 0 else { return }
        live.update { $0 = max($0, new) }
    }

    /// The count now, then each new count (only the newest when a listener lags).
    func stream() -> AsyncStream<Int> {
        listeners.add(1, ordering: .sequentiallyConsistent)
        let current = count.load(ordering: .sequentiallyConsistent)
        live.update { $0 = max($0, current) }
        let upstream = live.stream()
        return AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let task = Task {
                for await value in upstream { continuation.yield(value) }
                continuation.finish()
            }
            continuation.onTermination = { [weak self] _ in
                task.cancel()
                self?.listeners.subtract(1, ordering: .sequentiallyConsistent)
            }
        }
    }
}
