import Synchronization

/// A clock that moves only when a test says so, and that lets the test wait until code under
/// test has started sleeping on it: no real time passes and nothing is polled.
///
/// `advance(by:)` wakes, in deadline order, every sleeper whose deadline has come. Thread-safe.
public final class ManualClock: Clock, Sendable {
    /// A point on the manual clock: an offset from its start.
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock's start.
        public var offset: Duration

        public init(offset: Duration = .zero) { self.offset = offset }
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct State {
        var now = Instant()
        /// Tasks sleeping until their deadline.
        var sleepers = WaitList<Instant, any Error>()
        /// Tasks waiting until as many tasks sleep as each asks for.
        var watchers = WaitList<Int, Never>()

        /// Takes out the watchers whose count of sleepers is reached.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            let sleeping = sleepers.count
            return watchers.removeAll { $0 <= sleeping }.map(\.continuation)
        }
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .zero }

    /// How many tasks are sleeping on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { $0.sleepers.reserve() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (wake, watchers) = state.withLock { state -> (Result<Void, CancellationError>?, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers.add(id, waitingFor: deadline, continuation)
                    return (nil, state.satisfiedWatchers())
                }
                if let wake { continuation.resume(with: wake) }
                for watcher in watchers { watcher.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.remove(id) }?.resume(throwing: CancellationError())
        }
    }

    /// Returns once at least `count` tasks are sleeping on this clock, or once the waiting task
    /// is cancelled (a test's time limit): code that never sleeps fails the test, never hangs it.
    public func waitForSleepers(_ count: Int = 1) async {
        let id = state.withLock { $0.watchers.reserve() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if state.sleepers.count >= count || Task.isCancelled { return true }
                    state.watchers.add(id, waitingFor: count, continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.watchers.remove(id) }?.resume()
        }
    }

    /// Moves the clock forward and wakes every sleeper whose deadline has come, earliest first.
    public func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            return state.sleepers.removeAll { $0 <= now }.sorted { $0.condition < $1.condition }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
