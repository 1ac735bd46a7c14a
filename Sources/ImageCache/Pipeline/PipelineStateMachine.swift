/// What the pipeline's bookkeeping holds on to but never looks inside: the continuations it
/// resumes, the tasks it cancels, the failures it remembers and the clock's instants. The
/// pipeline uses continuations and tasks; tests use plain values.
protocol PipelineHandles {
    /// A caller waiting for a flight's result.
    associatedtype Waiter: Sendable
    /// Work waiting for a slot in a stage.
    associatedtype SlotWaiter: Sendable
    /// A flight's work, which outlives its leader (a task).
    associatedtype Work: Sendable
    /// The deadline of work queued beyond a stage's capacity (a task).
    associatedtype Deadline: Sendable
    /// A remembered failure.
    associatedtype Failure: Error & Equatable & Sendable
    /// A point in time on the pipeline's clock.
    associatedtype Instant: Comparable & Sendable
}

/// All of the pipeline's bookkeeping in one value: the flights (one running load per cache key,
/// everybody who asked for it, and the failures remembered until their expiry), the priority of
/// each flight, and the limited stages' slots and queues. One value, state of the pipeline on the
/// ``ImageDatabase`` actor, changed synchronously there, so "who
/// waits for which flight" and "how urgent is that flight's work" are one fact, not two kept
/// in step.
///
/// A pure value type in the style of swift-nio's state machines: each operation changes the state
/// and returns what the caller must do (resume these waiters, cancel that work, refuse that entry);
/// the caller does it in the same turn on the actor. Nothing here suspends, sleeps or reads a clock.
///
/// ## Flights
///
/// ```
/// begin ──► lead ──► handOff(start work) ──► addWaiter ──► finish     (one turn, then the work)
/// begin ──► join ──► addWaiter ──► resumed by finish, or by cancel
/// ```
///
/// Everybody who asks for a flight is a *member* of it, from ``begin(_:asker:wantsMemory:now:retrying:)``
/// until the flight ends or the member cancels: the leader, callers told to join that have not
/// added their continuation yet, and waiters. A flight is wanted while it has members; when its
/// last waiter cancels, its work is cancelled and the flight forgotten. A cancellation that
/// arrives before its waiter was added is kept on the member, so the add fails at once.
///
/// ## Priorities
///
/// A member asks as an ``Asker``: an ``ImageTask`` (whose priority can change), a plain request
/// (a fixed priority), or a variant's flight asking for its original. A flight runs at the highest
/// priority among its members, so raising a task's priority moves the work it waits for, and an
/// original is fetched at the priority of the variants waiting for it:
///
/// ```
/// task(high) ──┐
/// fixed(low) ──┴──► flight "…#thumbnail-200" ──► flight "…/7.png" (the original)
/// ```
///
/// ## Stages
///
/// Disk reads, downloads (in total and per host), processing and disk writes each have a limit
/// (``ImagePipeline/Limits``). Work beyond it waits in that stage's queue and starts, when a slot
/// frees, by its flight's priority at that moment, first in first out among equals. See
/// `PipelineStateMachine+Stages.swift`.
struct PipelineStateMachine<Handles: PipelineHandles> {
    typealias Waiter = Handles.Waiter
    typealias Work = Handles.Work
    typealias Failure = Handles.Failure
    typealias Instant = Handles.Instant
    typealias Priority = ImageRequest.Priority
    /// Identifies one flight; a key's next flight has a new one.
    typealias FlightID = UInt64
    /// Identifies one member of a flight.
    typealias MemberID = UInt64
    /// Identifies one ``ImageTask``.
    typealias TaskID = UInt64

    /// Who asks for a flight, and so where its priority comes from.
    enum Asker: Hashable, Sendable {
        /// An ``ImageTask``, whose priority can change while it waits.
        case task(TaskID)
        /// A plain request at a fixed priority.
        case fixed(Priority)
        /// The work of a variant's flight, asking for its original.
        case flight(FlightID)
    }

    /// One caller of a flight.
    struct Member {
        enum State {
            /// The leader, running its own first stage.
            case leading
            /// Told to join (or a leader after its hand-off); its waiter is not added yet.
            case joining
            /// Waits for the result.
            case waiting(Waiter)
            /// Cancelled before its waiter was added: the add fails.
            case cancelledEarly
        }

        let asker: Asker
        let wantsMemory: Bool
        var state: State
    }

    struct Flight {
        let id: FlightID
        let key: String
        /// The shared work, attached when the leader hands off; `nil` while the leader leads.
        var work: Work?
        var members: [MemberID: Member] = [:]
        /// The highest priority among the members.
        var priority: Priority
        /// Flights this flight's work is a member of (a variant's, of its original's), with how
        /// many times: they follow this flight's priority.
        var outputs: [FlightID: Int] = [:]
    }

    /// An ``ImageTask``'s priority, and the flights it is a member of.
    struct TaskNode {
        var priority: Priority
        var flights: [FlightID: Int] = [:]
    }

    private(set) var flights: [FlightID: Flight] = [:]
    /// The running flight of each key.
    private(set) var flightByKey: [String: FlightID] = [:]
    private(set) var failures: [String: (failure: Failure, until: Instant)] = [:]
    /// Origins no connection could be made to, by origin (scheme, host and port), until when:
    /// remembered beside the keys' failures, with the same expiry rule.
    private(set) var unreachableOrigins: [String: (failure: Failure, until: Instant)] = [:]
    private(set) var tasks: [TaskID: TaskNode] = [:]
    /// The stages' slots and queues (`PipelineStateMachine+Stages.swift`).
    var stages: Stages
    private(set) var lastID: UInt64 = 0

    init(limits: ImagePipeline.Limits) {
        stages = Stages(limits: limits)
    }

    /// A fresh identifier for anything this machine names.
    mutating func makeID() -> UInt64 {
        lastID += 1
        return lastID
    }

    // MARK: - Starting and joining

    enum BeginAction: Equatable {
        /// A remembered failure answers: throw it, start nothing.
        case fail(Failure)
        /// No flight was running: the caller leads the new flight, as `member`.
        case lead(FlightID, member: MemberID)
        /// A flight is running: the caller is its `member` and adds its waiter with
        /// ``addWaiter(_:member:flight:)``.
        case join(FlightID, member: MemberID)
    }

    /// The first step of every lookup that missed memory: the caller leads the key's flight or
    /// joins it, and is a member of it from now on.
    /// - Parameters:
    ///   - asker: whose priority the caller brings.
    ///   - wantsMemory: whether the caller wants the result kept in memory.
    ///   - retrying: forget a remembered failure and load again.
    mutating func begin(_ key: String, asker: Asker, wantsMemory: Bool, now: Instant, retrying: Bool) -> BeginAction {
        if let remembered = failures[key] {
            if retrying || now >= remembered.until {
                failures[key] = nil
            } else {
                return .fail(remembered.failure)
            }
        }
        if let id = flightByKey[key] {
            return .join(id, member: addMember(asker, wantsMemory: wantsMemory, state: .joining, to: id))
        }
        // A new flight with its leader as its one member, at the leader's priority.
        let id = makeID()
        let member = makeID()
        flights[id] = Flight(
            id: id, key: key, members: [member: Member(asker: asker, wantsMemory: wantsMemory, state: .leading)],
            priority: priority(of: asker) ?? .veryLow
        )
        flightByKey[key] = id
        link(asker, to: id)
        return .lead(id, member: member)
    }

    enum AddWaiterAction {
        /// The waiter waits for ``finish(_:remembering:)`` or its cancellation.
        case waiting
        /// The waiter was cancelled before it was added: resume it with cancellation. When it was
        /// the flight's last member, the flight is gone and `work` (if any) must be cancelled.
        case cancelled(cancelWork: Work?)
        /// The flight ended before the waiter was added: look up again (memory, or a new flight).
        case ended
    }

    /// Adds the waiter of `member`, who joined flight `id` (or led it and handed off).
    mutating func addWaiter(_ waiter: Waiter, member: MemberID, flight id: FlightID) -> AddWaiterAction {
        guard let state = flights[id]?.members[member]?.state else { return .ended }
        if case .cancelledEarly = state {
            removeMember(member, from: id)
            guard flights[id]!.members.isEmpty else { return .cancelled(cancelWork: nil) }
            return .cancelled(cancelWork: removeFlight(id).work)
        }
        flights[id]!.members[member]!.state = .waiting(waiter)
        return .waiting
    }

    // MARK: - The leader's hand-off

    /// The leader hands the flight to work that outlives it, made by
    /// `start` (which creates a task; it runs in the caller's turn on the actor, so nobody sees
    /// the flight without its work). The leader then adds its waiter with
    /// ``addWaiter(_:member:flight:)``, as a joiner would.
    /// - Returns: false when nobody else is interested and the leader was cancelled: the flight is
    ///   gone and nothing was started.
    mutating func handOff(_ id: FlightID, leader: MemberID, leaderCancelled: Bool, start: () -> Work) -> Bool {
        guard let members = flights[id]?.members.count else { return false }
        if leaderCancelled, members == 1 {
            removeFlight(id)
            return false
        }
        // In place: a copy of the flight would make its members' dictionary copy on write.
        flights[id]!.members[leader]?.state = .joining
        flights[id]!.work = start()
        return true
    }

    // MARK: - Cancelling

    enum CancelAction {
        /// Nothing to resume now: the waiter is not added yet (its add will fail), or its
        /// flight is over.
        case none
        /// Resume the waiter with cancellation; the others wait on.
        case resume(Waiter)
        /// Resume the waiter with cancellation and cancel the work: it was the last member.
        case resumeAndCancelWork(Waiter, Work?)
    }

    /// The waiter of `member` of flight `id` cancelled.
    mutating func cancel(_ member: MemberID, of id: FlightID) -> CancelAction {
        guard let state = flights[id]?.members[member]?.state else { return .none }
        switch state {
        case .joining:
            flights[id]!.members[member]!.state = .cancelledEarly
            return .none
        case .leading, .cancelledEarly:
            return .none
        case let .waiting(waiter):
            removeMember(member, from: id)
            guard flights[id]!.members.isEmpty else { return .resume(waiter) }
            return .resumeAndCancelWork(waiter, removeFlight(id).work)
        }
    }

    // MARK: - Finishing

    /// Ends flight `id`: returns the waiters to resume with its result, and remembers `failure`
    /// (if given) for its key until its expiry.
    /// - Returns: `nil` when the flight is no longer running (its last waiter cancelled it):
    ///   nobody waits and nothing is remembered.
    mutating func finish(_ id: FlightID, remembering failure: (Failure, until: Instant)? = nil) -> [Waiter]? {
        guard flights[id] != nil else { return nil }
        let flight = removeFlight(id)
        if let failure { failures[flight.key] = failure }
        return flight.members.values.compactMap { member in
            if case let .waiting(waiter) = member.state { waiter } else { nil }
        }
    }

    /// Whether any member of flight `id` wants its result kept in memory.
    func wantsMemory(_ id: FlightID) -> Bool {
        flights[id]?.members.values.contains { $0.wantsMemory } ?? false
    }

    // MARK: - Failures

    /// Forgets the failure remembered for `key`.
    mutating func forgetFailure(_ key: String) {
        failures[key] = nil
    }

    /// Forgets every remembered failure, of keys and of origins (running flights go on).
    mutating func forgetFailures() {
        failures.removeAll()
        unreachableOrigins.removeAll()
    }

    /// Remembers until `until` that no connection could be made to `origin`. Past 256 origins,
    /// those expired at `now` are forgotten first, and past 1,024 the one that expires soonest:
    /// a crawl of dead hosts cannot grow it for ever, whatever the expiry.
    mutating func rememberUnreachable(_ origin: String, _ failure: Failure, until: Instant, now: Instant) {
        if unreachableOrigins.count >= 256 { unreachableOrigins = unreachableOrigins.filter { now < $0.value.until } }
        if unreachableOrigins.count >= 1024, let soonest = unreachableOrigins.min(by: { $0.value.until < $1.value.until })?.key {
            unreachableOrigins[soonest] = nil
        }
        unreachableOrigins[origin] = (failure, until)
    }

    /// Forgets that `origin` was unreachable (it answered).
    mutating func forgetUnreachable(_ origin: String) {
        if !unreachableOrigins.isEmpty { unreachableOrigins[origin] = nil }
    }

    /// The failure remembered for `origin`, if it has not expired at `now` (an expired one is
    /// forgotten).
    mutating func unreachable(_ origin: String, now: Instant) -> (failure: Failure, until: Instant)? {
        guard let remembered = unreachableOrigins[origin] else { return nil }
        guard now < remembered.until else {
            unreachableOrigins[origin] = nil
            return nil
        }
        return remembered
    }

    /// The failure remembered for `key`, if it has not expired at `now`.
    func failure(_ key: String, now: Instant) -> (failure: Failure, until: Instant)? {
        guard let remembered = failures[key], now < remembered.until else { return nil }
        return remembered
    }

    // MARK: - Tasks and priorities

    /// A new ``ImageTask`` with `priority`; forget it with ``removeTask(_:)`` when it is done.
    mutating func makeTask(_ priority: Priority) -> TaskID {
        let id = makeID()
        tasks[id] = TaskNode(priority: priority)
        return id
    }

    /// Forgets a task. It is a member of no flight by then (its load returned); were it still
    /// one, those flights stop following its priority.
    mutating func removeTask(_ id: TaskID) {
        guard let node = tasks.removeValue(forKey: id) else { return }
        for flight in node.flights.keys { refresh(flight) }
    }

    /// Changes a task's priority; the flights it is a member of follow, and their originals'.
    mutating func setPriority(_ priority: Priority, ofTask id: TaskID) {
        guard tasks[id] != nil else { return }
        tasks[id]!.priority = priority
        for flight in tasks[id]!.flights.keys { refresh(flight) }
    }

    /// The priority of flight `id`, or `nil` when it is not running.
    func priority(ofFlight id: FlightID) -> Priority? {
        flights[id]?.priority
    }

    /// The priority `asker` brings, or `nil` when it is gone.
    private func priority(of asker: Asker) -> Priority? {
        switch asker {
        case let .task(id): tasks[id]?.priority
        case let .fixed(priority): priority
        case let .flight(id): flights[id]?.priority
        }
    }

    /// The priority flight `id` should have: the highest its members bring. (A loop, not
    /// `compactMap` and `max`: it runs for every member added or removed, and allocates nothing.)
    func expectedPriority(_ id: FlightID) -> Priority {
        var highest = Priority.veryLow
        for member in flights[id]?.members.values ?? [:].values {
            if let priority = priority(of: member.asker), priority > highest { highest = priority }
        }
        return highest
    }

    /// Recomputes flight `id`'s priority and, when it changed, its outputs'.
    private mutating func refresh(_ id: FlightID) {
        guard flights[id] != nil else { return }
        let priority = expectedPriority(id)
        guard priority != flights[id]!.priority else { return }
        flights[id]!.priority = priority
        for output in flights[id]!.outputs.keys { refresh(output) }
    }

    // MARK: - Members

    private mutating func addMember(_ asker: Asker, wantsMemory: Bool, state: Member.State, to id: FlightID) -> MemberID {
        let member = makeID()
        flights[id]!.members[member] = Member(asker: asker, wantsMemory: wantsMemory, state: state)
        link(asker, to: id)
        refresh(id)
        return member
    }

    private mutating func removeMember(_ member: MemberID, from id: FlightID) {
        guard let removed = flights[id]?.members.removeValue(forKey: member) else { return }
        unlink(removed.asker, from: id)
        refresh(id)
    }

    /// Removes flight `id` and every membership of it.
    @discardableResult
    private mutating func removeFlight(_ id: FlightID) -> Flight {
        let flight = flights.removeValue(forKey: id)!
        flightByKey[flight.key] = nil
        for member in flight.members.values { unlink(member.asker, from: id) }
        // Its work may still be a member of its original's flight until that member leaves: it
        // brings no priority from now on.
        for output in flight.outputs.keys { refresh(output) }
        return flight
    }

    private mutating func link(_ asker: Asker, to id: FlightID) {
        switch asker {
        case let .task(task) where tasks[task] != nil: tasks[task]!.flights[id, default: 0] += 1
        case let .flight(variant) where flights[variant] != nil: flights[variant]!.outputs[id, default: 0] += 1
        default: break
        }
    }

    private mutating func unlink(_ asker: Asker, from id: FlightID) {
        func decrement(_ counts: inout [FlightID: Int]) {
            guard let count = counts[id] else { return }
            counts[id] = count > 1 ? count - 1 : nil
        }
        switch asker {
        case let .task(task) where tasks[task] != nil: decrement(&tasks[task]!.flights)
        case let .flight(variant) where flights[variant] != nil: decrement(&flights[variant]!.outputs)
        default: break
        }
    }

    // MARK: - Reading

    /// The running flight of `key`, if any.
    func flight(forKey key: String) -> Flight? {
        flightByKey[key].flatMap { flights[$0] }
    }

    /// Waiters of the running flight of `key` (0 when none runs).
    func waiterCount(_ key: String) -> Int {
        flight(forKey: key)?.members.values.filter { if case .waiting = $0.state { true } else { false } }.count ?? 0
    }
}
