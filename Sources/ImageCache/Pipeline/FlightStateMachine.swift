/// The bookkeeping of single flight: per key, the one running load, the callers waiting for it,
/// and the failures remembered until their expiry. A pure value type: each operation changes the
/// state and returns what the caller must do (resume a waiter, start or cancel work); the caller
/// does it, outside the lock that guards this value. Nothing here suspends, sleeps or reads a clock.
///
/// The life of one flight:
///
/// ```
/// begin ──► lead ──(leader's own stage, e.g. a disk read)──► finish     (answered inline)
///              └──► handOff(start work) ──► waiters join ──► finish     (work in a task)
/// begin ──► join ──► addWaiter ──► resumed by finish, or by cancel
/// ```
///
/// - The first caller for a key *leads*: it runs the cheap first stage itself, with no task, and
///   either finishes the flight or hands the rest to a piece of work (a task) it attaches.
/// - Later callers *join*: they add themselves as waiters and are resumed with the result.
/// - A waiter that cancels is resumed at once with cancellation; when the last one leaves a
///   flight whose work runs (and no caller told to join is still on its way), the work is
///   cancelled and the flight forgotten. A cancellation that arrives before its waiter was added
///   is remembered on the flight, so the add fails at once.
/// - A failure is remembered until the expiry the caller gives (none for cancellation); until
///   then `begin` answers it without starting anything, unless the caller retries on purpose.
///
/// Generic over the waiter (a continuation in the pipeline, a plain value in tests), the work
/// handle (a `Task`), the failure and the clock's instant.
struct FlightStateMachine<Waiter, Work, Failure: Error & Equatable, Instant: Comparable> {
    /// Identifies one flight of a key; a key's next flight has a new one.
    typealias FlightID = UInt64
    /// Identifies one waiter.
    typealias WaiterID = UInt64

    struct Flight {
        let id: FlightID
        /// True while the leader runs its first stage inline.
        var leading = true
        var work: Work?
        var waiters: [WaiterID: Waiter] = [:]
        /// Callers told to join (and the leader after its hand-off) that have not added
        /// themselves yet: they keep the flight's work alive as waiters do.
        var pendingJoins = 0
        /// Waiters cancelled before they were added.
        var cancelledEarly: Set<WaiterID> = []

        /// Whether anybody still wants the result: the leader, a waiter, or one about to wait.
        var isWanted: Bool { leading || !waiters.isEmpty || pendingJoins > 0 }
    }

    private(set) var flights: [String: Flight] = [:]
    private(set) var failures: [String: (failure: Failure, until: Instant)] = [:]
    private var lastID: UInt64 = 0

    /// A fresh identifier for a flight or a waiter.
    mutating func makeID() -> UInt64 {
        lastID += 1
        return lastID
    }

    // MARK: - Starting and joining

    enum BeginAction: Equatable {
        /// A remembered failure answers: throw it, start nothing.
        case fail(Failure)
        /// No flight was running: the caller leads the new flight `id`.
        case lead(FlightID)
        /// A flight is running: the caller joins it with ``addWaiter(_:id:to:flight:)``.
        case join(FlightID)
    }

    /// The first step of every lookup that missed memory.
    /// - Parameter retrying: forget a remembered failure and load again.
    mutating func begin(_ key: String, now: Instant, retrying: Bool) -> BeginAction {
        if let remembered = failures[key] {
            if retrying || now >= remembered.until {
                failures[key] = nil
            } else {
                return .fail(remembered.failure)
            }
        }
        if var flight = flights[key] {
            flight.pendingJoins += 1
            flights[key] = flight
            return .join(flight.id)
        }
        let id = makeID()
        flights[key] = Flight(id: id)
        return .lead(id)
    }

    enum AddWaiterAction {
        /// The waiter waits for ``finish(_:flight:remembering:)`` or its cancellation.
        case waiting
        /// The waiter was cancelled before it was added: resume it with cancellation. When it was
        /// the flight's last interest, the flight is gone and `work` (if any) must be cancelled.
        case cancelled(cancelWork: Work?)
        /// The flight ended before the waiter was added: look up again (memory, or a new flight).
        case ended
    }

    /// Adds a waiter to the running flight `id` of `key`.
    mutating func addWaiter(_ waiter: Waiter, id waiterID: WaiterID, to key: String, flight id: FlightID) -> AddWaiterAction {
        guard var flight = flights[key], flight.id == id else { return .ended }
        flight.pendingJoins -= 1
        if flight.cancelledEarly.remove(waiterID) != nil {
            if !flight.isWanted {
                flights[key] = nil
                return .cancelled(cancelWork: flight.work)
            }
            flights[key] = flight
            return .cancelled(cancelWork: nil)
        }
        flight.waiters[waiterID] = waiter
        flights[key] = flight
        return .waiting
    }

    // MARK: - The leader's hand-off

    /// The leader's first stage missed: the rest becomes work that outlives the leader, made by
    /// `start` (which creates a task; it runs while the caller holds its lock, so nobody sees the
    /// flight without its work). The leader then joins as a waiter, with
    /// ``addWaiter(_:id:to:flight:)``.
    /// - Returns: false when nobody is interested any more (the leader was cancelled and nobody
    ///   joined): the flight is gone and nothing was started.
    mutating func handOff(_ key: String, flight id: FlightID, leaderCancelled: Bool, start: () -> Work) -> Bool {
        guard var flight = flights[key], flight.id == id else { return false }
        if leaderCancelled, flight.waiters.isEmpty, flight.pendingJoins == 0 {
            flights[key] = nil
            return false
        }
        flight.leading = false
        flight.pendingJoins += 1
        flight.work = start()
        flights[key] = flight
        return true
    }

    // MARK: - Cancelling

    enum CancelAction {
        /// Nothing to resume now: the waiter was already resumed, or it is not added yet (its
        /// add will fail), or its flight is over.
        case none
        /// Resume the waiter with cancellation; the others wait on.
        case resume(Waiter)
        /// Resume the waiter with cancellation and cancel the work: it was the last interest.
        case resumeAndCancelWork(Waiter, Work?)
    }

    /// The waiter `waiterID` of flight `id` cancelled.
    mutating func cancel(_ waiterID: WaiterID, of key: String, flight id: FlightID) -> CancelAction {
        guard var flight = flights[key], flight.id == id else { return .none }
        guard let waiter = flight.waiters.removeValue(forKey: waiterID) else {
            flight.cancelledEarly.insert(waiterID)
            flights[key] = flight
            return .none
        }
        if !flight.isWanted {
            flights[key] = nil
            return .resumeAndCancelWork(waiter, flight.work)
        }
        flights[key] = flight
        return .resume(waiter)
    }

    // MARK: - Finishing

    /// Ends flight `id` of `key`: returns the waiters to resume with its result, and remembers
    /// `failure` (if given) until its expiry.
    /// - Returns: `nil` when the flight is no longer current (its last waiter cancelled it):
    ///   nobody waits and nothing is remembered.
    mutating func finish(_ key: String, flight id: FlightID, remembering failure: (Failure, until: Instant)? = nil) -> [Waiter]? {
        guard let flight = flights[key], flight.id == id else { return nil }
        flights[key] = nil
        if let failure { failures[key] = failure }
        return Array(flight.waiters.values)
    }

    // MARK: - Forgetting and reading

    /// Forgets the failure remembered for `key`.
    mutating func forgetFailure(_ key: String) {
        failures[key] = nil
    }

    /// Forgets every remembered failure (running flights go on).
    mutating func forgetFailures() {
        failures.removeAll()
    }

    /// The failure remembered for `key`, if it has not expired at `now`.
    func failure(_ key: String, now: Instant) -> (failure: Failure, until: Instant)? {
        guard let remembered = failures[key], now < remembered.until else { return nil }
        return remembered
    }

    /// Waiters of the running flight of `key` (0 when none runs).
    func waiterCount(_ key: String) -> Int {
        flights[key]?.waiters.count ?? 0
    }

    /// Checks the machine's invariants; tests call it after every operation.
    /// - Returns: the first violation found, or `nil`.
    func invariantViolation() -> String? {
        for (key, flight) in flights {
            if flight.id > lastID { return "\(key): flight id \(flight.id) was never issued" }
            if !flight.leading, flight.work == nil {
                return "\(key): a handed-off flight has no work, so nothing will ever end it"
            }
            if flight.pendingJoins < 0 { return "\(key): \(flight.pendingJoins) pending joins" }
            if !flight.isWanted { return "\(key): a flight nobody wants was not cancelled" }
            if flight.cancelledEarly.count > flight.pendingJoins {
                return "\(key): more early cancellations than callers about to join"
            }
            if flight.leading, flight.work != nil { return "\(key): work attached while the leader still leads" }
            if !flight.cancelledEarly.isDisjoint(with: flight.waiters.keys) {
                return "\(key): a waiter is both waiting and cancelled"
            }
        }
        return nil
    }
}
