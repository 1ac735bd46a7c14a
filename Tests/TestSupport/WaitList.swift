/// Tasks waiting for something, each with what it waits for, in the order they came: the one
/// waiting list of the test helpers (``Gate``'s waiters, ``ManualClock``'s sleepers and the
/// tasks that wait for them). A value: the helper that owns it keeps it behind its own lock, and
/// resumes the continuations it takes out after that lock is released.
///
/// Each waiter gets its number from ``reserve()`` before it suspends, so a cancellation handler
/// that runs before the waiter is added still knows which one to take out.
struct WaitList<Condition, Failure: Error> {
    typealias Continuation = CheckedContinuation<Void, Failure>

    private var waiters: [(id: Int, condition: Condition, continuation: Continuation)] = []
    private var lastID = 0

    /// How many wait now.
    var count: Int { waiters.count }

    /// A number for a waiter that is about to be added.
    mutating func reserve() -> Int {
        lastID += 1
        return lastID
    }

    /// Adds the waiter `id`, which waits for `condition`.
    mutating func add(_ id: Int, waitingFor condition: Condition, _ continuation: Continuation) {
        waiters.append((id, condition, continuation))
    }

    /// Takes out the waiter `id`, if it still waits (a cancelled one, say).
    mutating func remove(_ id: Int) -> Continuation? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index).continuation
    }

    /// Takes out every waiter whose condition is met, in the order they came, with what each
    /// waited for.
    mutating func removeAll(where isMet: (Condition) -> Bool) -> [(condition: Condition, continuation: Continuation)] {
        var met: [(condition: Condition, continuation: Continuation)] = []
        waiters.removeAll { waiter in
            guard isMet(waiter.condition) else { return false }
            met.append((waiter.condition, waiter.continuation))
            return true
        }
        return met
    }
}
