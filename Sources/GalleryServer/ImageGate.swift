import Synchronization

/// A test control of the gallery: while installed, every image request waits at the gate until
/// a permit lets it through, so a test can let the gallery's answers out a few at a time and
/// watch what a client does in between, whatever the machine's speed.
///
/// Off by default (``GalleryConfiguration/imageGate`` is `nil`); `emojiart gallery
/// --hold-images` installs one and adds the control routes under `/gallery/test/` (see
/// ``GateController``). The feed, `/health` and `/metrics` never wait.
///
/// Thread-safe: its state sits behind a `Mutex`. A held request that is cancelled (its client
/// went away) leaves the gate without using a permit.
public final class ImageGate: Sendable {
    private struct State {
        var permits = 0
        var isOpen = false
        var passed = 0
        var nextID = 0
        var held: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        /// Callers of `waitUntilHolding(_:)`: how many held requests each waits for.
        var watchers: [(id: Int, count: Int, continuation: CheckedContinuation<Void, any Error>)] = []

        /// Takes out the watchers whose count is reached.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, any Error>] {
            let count = held.count
            let satisfied = watchers.filter { $0.count <= count }.map(\.continuation)
            watchers.removeAll { $0.count <= count }
            return satisfied
        }
    }

    private let state = Mutex(State())

    /// Creates a closed gate with no permits.
    public init() {}

    /// What the gate has done so far.
    public struct Status: Sendable, Hashable, Codable {
        /// Requests waiting at the gate now.
        public var waiting: Int
        /// Requests the gate has let through.
        public var passed: Int
        /// Permits not yet used.
        public var permits: Int
        /// Whether the gate lets every request through.
        public var open: Bool
    }

    /// The gate's counts.
    public var status: Status {
        state.withLock { Status(waiting: $0.held.count, passed: $0.passed, permits: $0.permits, open: $0.isOpen) }
    }

    /// Waits for a permit (or returns at once when the gate is open or a permit is left).
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    public func pass() async throws {
        let id = state.withLock { state -> Int? in
            if state.isOpen || state.permits > 0 {
                if !state.isOpen { state.permits -= 1 }
                state.passed += 1
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // nil: passed at once; otherwise held, with the watchers that now see enough held.
                let outcome = state.withLock { state -> Result<[CheckedContinuation<Void, any Error>]?, CancellationError> in
                    // Cancelled before this ran: the cancellation handler found nothing to resume.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    // A permit may have arrived between the first check and now.
                    if state.isOpen || state.permits > 0 {
                        if !state.isOpen { state.permits -= 1 }
                        state.passed += 1
                        return .success(nil)
                    }
                    state.held.append((id, continuation))
                    return .success(state.satisfiedWatchers())
                }
                switch outcome {
                case .success(nil): continuation.resume()
                case let .success(watchers?): for watcher in watchers { watcher.resume() }
                case let .failure(error): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                state.held.firstIndex { $0.id == id }.map { state.held.remove(at: $0).continuation }
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Returns once at least `count` requests are waiting at the gate: how a test knows that
    /// what it sent has arrived and is held, without polling ``status``.
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    public func waitUntilHolding(_ count: Int) async throws {
        let id = state.withLock { state -> Int? in
            guard state.held.count < count else { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Bool, CancellationError> in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.held.count >= count { return .success(true) }
                    state.watchers.append((id, count, continuation))
                    return .success(false)
                }
                switch outcome {
                case .success(true): continuation.resume()
                case .success(false): break
                case let .failure(error): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                state.watchers.firstIndex { $0.id == id }.map { state.watchers.remove(at: $0).continuation }
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Lets `count` more requests through: those waiting first, in arrival order, then later ones.
    public func release(_ count: Int) {
        let admitted = state.withLock { state in
            state.permits += max(0, count)
            let taken = min(state.permits, state.held.count)
            state.permits -= taken
            state.passed += taken
            let admitted = state.held.prefix(taken).map(\.continuation)
            state.held.removeFirst(taken)
            return admitted
        }
        for continuation in admitted { continuation.resume() }
    }

    /// Lets every waiting and every later request through.
    public func open() {
        let admitted = state.withLock { state in
            state.isOpen = true
            state.passed += state.held.count
            let admitted = state.held.map(\.continuation)
            state.held.removeAll()
            return admitted
        }
        for continuation in admitted { continuation.resume() }
    }
}
