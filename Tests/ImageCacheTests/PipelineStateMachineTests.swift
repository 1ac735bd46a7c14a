@testable import ImageCache
import Testing
import TestSupport

/// Plain values for what the bookkeeping holds: waiters are numbers, work and deadlines names.
enum PlainHandles: PipelineHandles {
    struct Failure: Error, Equatable { let reason: String }
    typealias Waiter = Int
    typealias SlotWaiter = Int
    typealias Work = String
    typealias Deadline = String
    typealias Instant = Int
}

/// The flights and their members, driven directly: no tasks, no gates, no clocks. The
/// invariants are checked after every operation.
@Suite struct PipelineStateMachineFlightTests {
    typealias Machine = PipelineStateMachine<PlainHandles>
    typealias Failure = PlainHandles.Failure

    var machine = Machine(limits: ImagePipeline.Limits(
        downloads: 1, downloadsPerHost: 1, processing: 1, diskReads: 1, diskWrites: 1, waitingOriginalBytes: 1, queueCapacity: 1
    ))

    mutating func step<T>(_ operation: (inout Machine) -> T) -> T {
        let result = operation(&machine)
        #expect(machine.invariantViolation() == nil, "\(machine.invariantViolation() ?? "")")
        return result
    }

    mutating func begin(_ key: String = "k", now: Int = 0, retrying: Bool = false, _ priority: ImageRequest.Priority = .normal) -> Machine.BeginAction {
        step { $0.begin(key, asker: .fixed(priority), wantsMemory: true, now: now, retrying: retrying) }
    }

    /// Leads a new flight of `key`: its id and the leader's member id.
    mutating func lead(_ key: String = "k") throws -> (id: UInt64, leader: UInt64) {
        guard case let .lead(id, leader) = begin(key) else { throw Failure(reason: "expected to lead") }
        return (id, leader)
    }

    /// Joins the running flight of `key`: the member id.
    mutating func join(_ key: String = "k") throws -> UInt64 {
        guard case let .join(_, member) = begin(key) else { throw Failure(reason: "expected to join") }
        return member
    }

    mutating func handOff(_ flight: (id: UInt64, leader: UInt64), cancelled: Bool = false) -> Bool {
        step { $0.handOff(flight.id, leader: flight.leader, leaderCancelled: cancelled) { "work-\(flight.id)" } }
    }

    mutating func add(_ waiter: Int, _ member: UInt64, to id: UInt64) -> Machine.AddWaiterAction {
        step { $0.addWaiter(waiter, member: member, flight: id) }
    }

    @Test mutating func theFirstCallerLeadsAndLaterOnesJoin() throws {
        let flight = try lead()
        guard case .join(flight.id, _) = begin() else { Issue.record("did not join"); return }
        guard case .lead = begin("other") else { Issue.record("another key joined"); return }
    }

    @Test mutating func anInlineHitAnswersEveryoneWhoJoined() throws {
        let flight = try lead()
        let member = try join()
        guard case .waiting = add(7, member, to: flight.id) else { Issue.record("not waiting"); return }
        #expect(step { $0.waiterCount("k") } == 1)
        #expect(step { $0.finish(flight.id) } == [7])
        #expect(machine.flights.isEmpty && machine.failures.isEmpty)
        // The next caller leads a new flight.
        #expect(try lead().id != flight.id)
    }

    @Test mutating func workOutlivesTheLeaderAndAnswersAllWaiters() throws {
        let flight = try lead()
        #expect(handOff(flight))
        #expect(machine.flights[flight.id]?.work == "work-\(flight.id)")
        guard case .waiting = add(1, flight.leader, to: flight.id) else { Issue.record("leader not waiting"); return }
        let member = try join()
        guard case .waiting = add(2, member, to: flight.id) else { Issue.record("joiner not waiting"); return }
        #expect(Set(step { $0.finish(flight.id) } ?? []) == [1, 2])
    }

    @Test mutating func aFailureIsRememberedUntilItsExpiryUnlessRetried() throws {
        let flight = try lead()
        #expect(handOff(flight))
        _ = add(1, flight.leader, to: flight.id)
        #expect(step { $0.finish(flight.id, remembering: (Failure(reason: "500"), until: 5)) } == [1])
        #expect(begin(now: 4) == .fail(Failure(reason: "500")))
        #expect(step { $0.failure("k", now: 4) }?.until == 5)
        #expect(step { $0.failure("k", now: 5) } == nil)
        // Retrying forgets it at once; expiry forgets it on the next begin.
        guard case .lead = begin(now: 4, retrying: true) else { Issue.record("retry did not lead"); return }
        #expect(machine.failures.isEmpty)
    }

    @Test mutating func anExpiredFailureStartsAFreshFlight() throws {
        let flight = try lead()
        _ = step { $0.finish(flight.id, remembering: (Failure(reason: "404"), until: 300)) }
        guard case .lead = begin(now: 300) else { Issue.record("expired failure still answered"); return }
    }

    @Test mutating func forgettingFailures() throws {
        for key in ["a", "b"] {
            let flight = try lead(key)
            _ = step { $0.finish(flight.id, remembering: (Failure(reason: key), until: 10)) }
        }
        step { $0.forgetFailure("a") }
        #expect(step { $0.failure("a", now: 0) } == nil && step { $0.failure("b", now: 0) } != nil)
        step { $0.forgetFailures() }
        #expect(machine.failures.isEmpty)
    }

    /// Unreachable origins are remembered beside the keys' failures, with the same expiry, and
    /// forgotten with them; past 256 the expired ones go first.
    @Test mutating func unreachableOriginsExpireAndAreForgottenWithTheKeys() throws {
        step { $0.rememberUnreachable("http://a", Failure(reason: "refused"), until: 10, now: 0) }
        #expect(step { $0.unreachable("http://a", now: 9) }?.failure == Failure(reason: "refused"))
        #expect(step { $0.unreachable("http://b", now: 9) } == nil)
        #expect(step { $0.unreachable("http://a", now: 10) } == nil, "expired")
        #expect(machine.unreachableOrigins.isEmpty, "and forgotten")
        step { $0.rememberUnreachable("http://a", Failure(reason: "refused"), until: 10, now: 0) }
        step { $0.forgetUnreachable("http://a") }
        #expect(step { $0.unreachable("http://a", now: 0) } == nil, "it answered")
        for n in 0..<256 { step { $0.rememberUnreachable("http://\(n)", Failure(reason: "refused"), until: n < 200 ? 5 : 50, now: 0) } }
        step { $0.rememberUnreachable("http://new", Failure(reason: "refused"), until: 50, now: 20) }
        #expect(machine.unreachableOrigins.count == 57, "the 200 expired at 20 went")
        // None expired, whatever the expiry: at most 1,024, the soonest to expire out first.
        for n in 0..<1100 { step { $0.rememberUnreachable("http://long-\(n)", Failure(reason: "refused"), until: 1_000 + n, now: 20) } }
        #expect(machine.unreachableOrigins.count == 1024)
        #expect(machine.unreachableOrigins["http://long-1099"] != nil && machine.unreachableOrigins["http://long-0"] == nil)
        step { $0.forgetFailures() }
        #expect(machine.unreachableOrigins.isEmpty)
    }

    @Test mutating func oneWaiterCancellingLeavesTheOthersWaiting() throws {
        let flight = try lead()
        #expect(handOff(flight))
        _ = add(1, flight.leader, to: flight.id)
        let member = try join()
        _ = add(2, member, to: flight.id)
        guard case .resume(1) = step({ $0.cancel(flight.leader, of: flight.id) }) else { Issue.record("not resumed alone"); return }
        #expect(step { $0.finish(flight.id) } == [2])
    }

    @Test mutating func theLastWaiterCancellingCancelsTheWork() throws {
        let flight = try lead()
        #expect(handOff(flight))
        _ = add(1, flight.leader, to: flight.id)
        guard case .resumeAndCancelWork(1, "work-\(flight.id)") = step({ $0.cancel(flight.leader, of: flight.id) }) else {
            Issue.record("work not cancelled")
            return
        }
        #expect(machine.flights.isEmpty)
        // The cancelled work's own finish is stale: no waiter, nothing remembered.
        #expect(step { $0.finish(flight.id, remembering: (Failure(reason: "cancelled"), until: 9)) } == nil)
        #expect(machine.failures.isEmpty)
    }

    @Test mutating func aWaiterCancellingWhileTheLeaderReadsTheDiskCancelsNothing() throws {
        let flight = try lead()
        let member = try join()
        _ = add(2, member, to: flight.id)
        guard case .resume(2) = step({ $0.cancel(member, of: flight.id) }) else { Issue.record("not resumed"); return }
        #expect(machine.flights[flight.id] != nil, "the leader still leads the flight")
        #expect(step { $0.finish(flight.id) } == [])
    }

    @Test mutating func aCallerOnItsWayToJoinKeepsTheWorkAlive() throws {
        let flight = try lead()
        #expect(handOff(flight))
        _ = add(1, flight.leader, to: flight.id)
        let member = try join()  // told to join, not added yet
        guard case .resume(1) = step({ $0.cancel(flight.leader, of: flight.id) }) else { Issue.record("work was cancelled"); return }
        guard case .waiting = add(2, member, to: flight.id) else { Issue.record("joiner not waiting"); return }
        #expect(step { $0.finish(flight.id) } == [2])
    }

    @Test mutating func aCancellationBeforeTheAddIsRememberedOnTheMember() throws {
        let flight = try lead()
        #expect(handOff(flight))
        // The leader's task was cancelled before it added itself: the add fails at once and,
        // with nobody else interested, the work is cancelled.
        guard case .none = step({ $0.cancel(flight.leader, of: flight.id) }) else { Issue.record("resumed a waiter never added"); return }
        guard case .cancelled(cancelWork: "work-\(flight.id)") = add(1, flight.leader, to: flight.id) else {
            Issue.record("early cancellation lost")
            return
        }
        #expect(machine.flights.isEmpty)
    }

    @Test mutating func anEarlyCancellationWithOthersWaitingCancelsOnlyItself() throws {
        let flight = try lead()
        #expect(handOff(flight))
        let member = try join()
        _ = add(2, member, to: flight.id)
        _ = step { $0.cancel(flight.leader, of: flight.id) }
        guard case .cancelled(cancelWork: nil) = add(1, flight.leader, to: flight.id) else {
            Issue.record("expected the leader alone to be cancelled")
            return
        }
        #expect(step { $0.finish(flight.id) } == [2])
    }

    @Test mutating func aCancelledLeaderWithNobodyElseStartsNothing() throws {
        let flight = try lead()
        #expect(!handOff(flight, cancelled: true))
        #expect(machine.flights.isEmpty)
    }

    @Test mutating func aCancelledLeaderStillStartsTheWorkForOthers() throws {
        let flight = try lead()
        _ = try join()
        #expect(handOff(flight, cancelled: true))
        #expect(machine.flights[flight.id]?.work == "work-\(flight.id)")
    }

    @Test mutating func addingToAFlightThatEndedSaysSo() throws {
        let flight = try lead()
        let member = try join()
        _ = step { $0.finish(flight.id) }
        guard case .ended = add(2, member, to: flight.id) else { Issue.record("expected ended"); return }
        let next = try lead()
        guard case .ended = add(2, member, to: flight.id) else { Issue.record("joined the wrong flight"); return }
        guard case .none = step({ $0.cancel(member, of: flight.id) }) else { Issue.record("cancelled in the wrong flight"); return }
        #expect(machine.flight(forKey: "k")?.id == next.id && machine.flight(forKey: "k")?.members.count == 1)
    }

    @Test mutating func aCancelledLeaderWithOnlyAnEarlyCancelledJoinerStillHandsOff() throws {
        let flight = try lead()
        let member = try join()
        _ = step { $0.cancel(member, of: flight.id) }  // cancelled before its waiter was added
        #expect(handOff(flight, cancelled: true), "a member is still on its way")
        guard case .cancelled(cancelWork: nil) = add(2, member, to: flight.id) else { Issue.record("joiner not cancelled alone"); return }
        _ = step { $0.cancel(flight.leader, of: flight.id) }
        guard case .cancelled(cancelWork: "work-\(flight.id)") = add(1, flight.leader, to: flight.id) else {
            Issue.record("the last member's cancellation did not cancel the work")
            return
        }
        #expect(machine.flights.isEmpty)
    }

    @Test mutating func theResultIsKeptInMemoryWhileAnyMemberWantsIt() throws {
        guard case let .lead(id, leader) = step({ $0.begin("k", asker: .fixed(.low), wantsMemory: false, now: 0, retrying: false) }) else {
            Issue.record("did not lead")
            return
        }
        #expect(!machine.wantsMemory(id))
        guard case let .join(_, member) = step({ $0.begin("k", asker: .fixed(.normal), wantsMemory: true, now: 0, retrying: false) }) else {
            Issue.record("did not join")
            return
        }
        #expect(machine.wantsMemory(id))
        #expect(step { $0.handOff(id, leader: leader, leaderCancelled: false) { "work" } })
        _ = add(2, member, to: id)
        _ = step { $0.cancel(member, of: id) }
        #expect(!machine.wantsMemory(id), "the member who wanted it left")
    }
}

/// Priorities and the stages' slots and queues, driven directly.
@Suite struct PipelineStateMachineStageTests {
    typealias Machine = PipelineStateMachine<PlainHandles>

    static func machine(
        processing: Int = 1, downloads: Int = 4, perHost: Int = 2, bytes: Int = 1000, capacity: Int = 1000
    ) -> Machine {
        Machine(limits: ImagePipeline.Limits(
            downloads: downloads, downloadsPerHost: perHost, processing: processing, diskReads: 1, diskWrites: 1,
            waitingOriginalBytes: bytes, queueCapacity: capacity
        ))
    }

    /// Leads a flight for `waiter` as a new task of `priority`, hands it off and queues its work
    /// for `stage`.
    @discardableResult
    static func queue(
        _ machine: inout Machine, _ waiter: Int, _ priority: ImageRequest.Priority, stage: Machine.Stage = .processing,
        host: String? = nil
    ) -> (task: UInt64, flight: UInt64, entry: UInt64, action: Machine.EnqueueAction, refused: Int?) {
        let task = machine.makeTask(priority)
        guard case let .lead(flight, leader) = machine.begin(
            "piece-\(waiter)", asker: .task(task), wantsMemory: true, now: 0, retrying: false
        ) else { fatalError("a new key is led") }
        _ = machine.handOff(flight, leader: leader, leaderCancelled: false) { "work-\(waiter)" }
        let entry = machine.makeID()
        let (action, refused) = machine.enqueue(stage, id: entry, flight: flight, host: host, waiter: waiter)
        #expect(machine.invariantViolation() == nil, "\(machine.invariantViolation() ?? "")")
        return (task, flight, entry, action, refused?.waiter)
    }

    static func release(_ machine: inout Machine, _ stage: Machine.Stage = .processing, host: String? = nil) -> [Int] {
        let started = machine.release(stage, host: host).map(\.waiter)
        #expect(machine.invariantViolation() == nil, "\(machine.invariantViolation() ?? "")")
        return started
    }

    @Test func aVeryHighRequestQueuedAfterAHundredLowOnesStartsNext() {
        var machine = Self.machine()
        let step1 = machine.tryStart(.processing, host: nil)
        #expect(step1)
        for waiter in 0..<100 { Self.queue(&machine, waiter, .low) }
        Self.queue(&machine, 100, .veryHigh)
        #expect(Self.release(&machine) == [100])
        #expect(Self.release(&machine) == [0])  // then first in, first out
        #expect(Self.release(&machine) == [1])
        #expect(machine.stats.processing.maxRunning == 1)
        #expect(machine.stats.processing.maxQueued == 101)
    }

    /// Background work holds at most its limit of the processing slots (one fewer than the
    /// slots by default): a request somebody waits for, queued behind a hundred background
    /// ones, starts at the next free slot, and one slot is always left to it.
    @Test func backgroundWorkLeavesAProcessorToInteractiveWork() {
        var machine = Self.machine(processing: 3)
        #expect(machine.stats.processing.backgroundLimit == 2)
        var started: [(waiter: Int, slot: UInt64)] = []
        for waiter in 0..<100 {
            let queued = Self.queue(&machine, waiter, waiter.isMultiple(of: 2) ? .low : .veryLow)
            if case .start = queued.action { started.append((waiter, queued.entry)) }
        }
        #expect(started.map(\.waiter) == [0, 1], "two of three slots, then the background queues")
        #expect(machine.stats.processing.running == 2 && machine.stats.processing.queued == 98)
        // An interactive request finds the third slot free at once.
        let interactive = Self.queue(&machine, 100, .normal)
        guard case .start = interactive.action else { Issue.record("interactive work waited"); return }
        // Its end frees the slot for the next interactive request, not for background work.
        let next = machine.release(.processing, host: nil, slot: interactive.entry)
        #expect(next.isEmpty, "the background limit holds: \(next.map(\.waiter))")
        // A background slot freed starts the best background work: .low before .veryLow.
        let after = machine.release(.processing, host: nil, slot: started[0].slot)
        #expect(after.map(\.waiter) == [2])
        #expect(machine.stats.processing.maxBackgroundRunning == 2 && machine.stats.processing.backgroundRunning == 2)
        #expect(machine.invariantViolation() == nil, "\(machine.invariantViolation() ?? "")")
        // Promoted while queued (somebody now waits for it): it starts at once, as interactive
        // work, on the slot kept from background work; the caller of a raise must ask.
        let promoted = Self.queue(&machine, 200, .veryLow)
        machine.setPriority(.high, ofTask: promoted.task)
        #expect(machine.invariantViolation() == "processing: queued work could start but waits")
        #expect(machine.startPromoted().map(\.waiter) == [200])
        #expect(machine.invariantViolation() == nil, "\(machine.invariantViolation() ?? "")")
        #expect(machine.stats.processing.backgroundRunning == 2 && machine.stats.processing.running == 3)
        // A background slot freed: the background slot's next.
        let freed = machine.release(.processing, host: nil, slot: started[1].slot)
        #expect(freed.map(\.waiter) == [4])
    }

    @Test func raisingAWaitingTasksPriorityMovesItsWork() {
        var machine = Self.machine()
        let step1 = machine.tryStart(.processing, host: nil)
        #expect(step1)
        var tasks: [UInt64] = []
        for waiter in 0..<10 { tasks.append(Self.queue(&machine, waiter, .low).task) }
        machine.setPriority(.high, ofTask: tasks[7])
        #expect(machine.invariantViolation() == nil)
        #expect(Self.release(&machine) == [7])
        machine.setPriority(.veryLow, ofTask: tasks[0])
        #expect(Self.release(&machine) == [1])
    }

    @Test func aFlightRunsAtTheHighestPriorityOfItsMembers() {
        var machine = Self.machine()
        let low = machine.makeTask(.low)
        let high = machine.makeTask(.high)
        guard case let .lead(flight, leader) = machine.begin("k", asker: .task(low), wantsMemory: false, now: 0, retrying: false) else {
            Issue.record("did not lead")
            return
        }
        #expect(machine.priority(ofFlight: flight) == .low)
        guard case let .join(_, member) = machine.begin("k", asker: .task(high), wantsMemory: true, now: 0, retrying: false) else {
            Issue.record("did not join")
            return
        }
        #expect(machine.priority(ofFlight: flight) == .high)
        _ = machine.handOff(flight, leader: leader, leaderCancelled: false) { "work" }
        _ = machine.addWaiter(2, member: member, flight: flight)
        _ = machine.cancel(member, of: flight)
        #expect(machine.priority(ofFlight: flight) == .low, "the high member left")
        #expect(machine.invariantViolation() == nil)
        _ = machine.finish(flight)
        #expect(machine.priority(ofFlight: flight) == nil)
        #expect(machine.invariantViolation() == nil)
    }

    @Test func anOriginalFollowsThePriorityOfTheVariantsMadeFromIt() {
        var machine = Self.machine()
        let task = machine.makeTask(.low)
        guard case let .lead(variant, leader) = machine.begin("k#thumb", asker: .task(task), wantsMemory: true, now: 0, retrying: false),
              machine.handOff(variant, leader: leader, leaderCancelled: false, start: { "variant" }),
              case let .lead(original, _) = machine.begin("k", asker: .flight(variant), wantsMemory: true, now: 0, retrying: false)
        else {
            Issue.record("expected two new flights")
            return
        }
        #expect(machine.priority(ofFlight: original) == .low)
        machine.setPriority(.veryHigh, ofTask: task)
        #expect(machine.priority(ofFlight: variant) == .veryHigh)
        #expect(machine.priority(ofFlight: original) == .veryHigh)
        #expect(machine.invariantViolation() == nil)
        // The variant's flight ends (its last waiter left): the original no longer has its
        // priority.
        _ = machine.addWaiter(1, member: leader, flight: variant)
        _ = machine.cancel(leader, of: variant)
        #expect(machine.priority(ofFlight: variant) == nil)
        #expect(machine.priority(ofFlight: original) == .veryLow)
        #expect(machine.invariantViolation() == nil)
    }

    @Test func aCancelledWaiterLeavesWithoutStarting() {
        var machine = Self.machine()
        let step1 = machine.tryStart(.processing, host: nil)
        #expect(step1)
        let first = Self.queue(&machine, 1, .normal)
        Self.queue(&machine, 2, .normal)
        #expect(machine.startOrder(.processing).count == 2)
        let left = machine.leave(.processing, id: first.entry)
        #expect(left?.waiter == 1)
        let again = machine.leave(.processing, id: first.entry)
        #expect(again == nil)  // once
        #expect(Self.release(&machine) == [2])
        #expect(machine.stats.processing.queued == 0)
    }

    @Test func aFullQueueRefusesBackgroundWorkFirst() {
        var machine = Self.machine(capacity: 3)
        let step1 = machine.tryStart(.processing, host: nil)
        #expect(step1)
        Self.queue(&machine, 1, .veryLow)
        Self.queue(&machine, 2, .low)
        Self.queue(&machine, 3, .normal)
        // Full. Normal work makes room by refusing the lowest background entry.
        let normal = Self.queue(&machine, 4, .normal)
        guard case .waiting(overCapacity: false) = normal.action else { Issue.record("\(normal.action)"); return }
        #expect(normal.refused == 1)
        // A prefetch outranks nothing left but the other prefetch: it is refused.
        let prefetch = Self.queue(&machine, 5, .low)
        guard case .refused = prefetch.action else { Issue.record("\(prefetch.action)"); return }
        // High work makes room by refusing the last background entry.
        let high = Self.queue(&machine, 6, .high)
        #expect(high.refused == 2)
        // Nothing left to refuse: interactive work waits beyond the capacity, with a deadline.
        let over = Self.queue(&machine, 7, .high)
        guard case .waiting(overCapacity: true) = over.action else { Issue.record("\(over.action)"); return }
        #expect(over.refused == nil)
        let kept = machine.setDeadline("deadline-7", stage: .processing, id: over.entry)
        #expect(kept)
        #expect(machine.stats.processing.refused == 3)
        #expect(machine.stats.processing.queued == 4)
        #expect(Self.release(&machine) == [6])
        // Its deadline passes: it leaves, counted.
        let expired = machine.expire(.processing, id: over.entry)
        #expect(expired == 7)
        #expect(machine.stats.processing.timedOut == 1)
        let late = machine.setDeadline("late", stage: .processing, id: over.entry)
        #expect(!late, "a deadline for work gone is refused")
    }

    @Test func downloadsKeepTheirPerHostLimitAndWaitForProcessingToCatchUp() {
        var machine = Self.machine(downloads: 3, perHost: 2, bytes: 1000)
        let step1 = machine.tryStart(.download, host: "a")
        #expect(step1)
        let step2 = machine.tryStart(.download, host: "a")
        #expect(step2)
        let step3 = machine.tryStart(.download, host: "a")
        #expect(!step3)
        Self.queue(&machine, 1, .normal, stage: .download, host: "a")
        // Another host still has room; then the total is reached.
        let step4 = machine.tryStart(.download, host: "b")
        #expect(step4)
        Self.queue(&machine, 2, .normal, stage: .download, host: "b")
        #expect(Self.release(&machine, .download, host: "a") == [1])
        #expect(machine.stats.maxDownloadsOnOneHost == 2)
        // Originals waiting for processing over the budget: nothing starts until they go.
        machine.holdOriginal(bytes: 1500)
        #expect(Self.release(&machine, .download, host: "b") == [])
        let resumed = machine.releaseOriginal(bytes: 1500).map(\.waiter)
        #expect(resumed == [2])
        #expect(machine.stats.maxWaitingOriginalBytes == 1500)
        #expect(machine.invariantViolation() == nil)
    }

    @Test func aVariantThatEndsBeforeItsOriginalTakesItsPriorityAway() {
        var machine = Self.machine()
        let task = machine.makeTask(.veryHigh)
        guard case let .lead(variant, leader) = machine.begin("k#thumb", asker: .task(task), wantsMemory: true, now: 0, retrying: false),
              machine.handOff(variant, leader: leader, leaderCancelled: false, start: { "variant" }),
              case let .lead(original, work) = machine.begin("k", asker: .flight(variant), wantsMemory: true, now: 0, retrying: false),
              case let .join(_, other) = machine.begin("k", asker: .fixed(.low), wantsMemory: false, now: 0, retrying: false)
        else {
            Issue.record("expected a variant, its original and a second caller")
            return
        }
        #expect(machine.priority(ofFlight: original) == .veryHigh)
        _ = machine.finish(variant)  // e.g. a stale variant answered while its original revalidates
        #expect(machine.priority(ofFlight: original) == .low, "the variant's work brings nothing once its flight is gone")
        #expect(machine.invariantViolation() == nil)
        _ = machine.handOff(original, leader: work, leaderCancelled: false) { "original" }
        _ = machine.addWaiter(1, member: work, flight: original)
        guard case .resume(1) = machine.cancel(work, of: original) else { Issue.record("the orphaned member did not leave"); return }
        _ = machine.addWaiter(2, member: other, flight: original)
        #expect(machine.finish(original) == [2])
        #expect(machine.invariantViolation() == nil)
    }

    @Test func aTaskThatIsAMemberTwiceIsFollowedUntilBothLeave() {
        var machine = Self.machine()
        let task = machine.makeTask(.low)
        guard case let .lead(flight, leader) = machine.begin("k", asker: .task(task), wantsMemory: true, now: 0, retrying: false),
              case let .join(_, second) = machine.begin("k", asker: .task(task), wantsMemory: true, now: 0, retrying: false)
        else {
            Issue.record("expected to lead, then join")
            return
        }
        _ = machine.handOff(flight, leader: leader, leaderCancelled: false) { "work" }
        _ = machine.addWaiter(1, member: leader, flight: flight)
        _ = machine.addWaiter(2, member: second, flight: flight)
        machine.setPriority(.high, ofTask: task)
        #expect(machine.priority(ofFlight: flight) == .high)
        _ = machine.cancel(second, of: flight)
        machine.setPriority(.veryHigh, ofTask: task)
        #expect(machine.priority(ofFlight: flight) == .veryHigh, "still a member once")
        #expect(machine.invariantViolation() == nil)
        machine.removeTask(task)  // as if its load had returned while still a member
        #expect(machine.priority(ofFlight: flight) == .veryLow)
        #expect(machine.invariantViolation() == nil)
    }

    @Test func anEntryRefusedToMakeRoomCarriesItsDeadline() {
        var machine = Self.machine(capacity: 1)
        let step1 = machine.tryStart(.processing, host: nil)
        #expect(step1)
        Self.queue(&machine, 1, .normal)
        let over = Self.queue(&machine, 2, .normal)
        guard case .waiting(overCapacity: true) = over.action else { Issue.record("\(over.action)"); return }
        let kept = machine.setDeadline("deadline-2", stage: .processing, id: over.entry)
        #expect(kept)
        // It becomes background work; a normal newcomer makes room by refusing it.
        machine.setPriority(.veryLow, ofTask: over.task)
        let task = machine.makeTask(.normal)
        guard case let .lead(flight, leader) = machine.begin("piece-3", asker: .task(task), wantsMemory: true, now: 0, retrying: false) else {
            Issue.record("did not lead")
            return
        }
        _ = machine.handOff(flight, leader: leader, leaderCancelled: false) { "work-3" }
        let (action, refused) = machine.enqueue(.processing, id: machine.makeID(), flight: flight, host: nil, waiter: 3)
        guard case .waiting = action else { Issue.record("\(action)"); return }
        #expect(refused?.waiter == 2 && refused?.deadline == "deadline-2", "its deadline comes with it, to be cancelled")
        #expect(machine.invariantViolation() == nil)
    }

    @Test func aQueuedEntryWhoseFlightIsGoneKeepsThePriorityItWasQueuedWith() {
        var machine = Self.machine()
        let step1 = machine.tryStart(.processing, host: nil)
        #expect(step1)
        let high = Self.queue(&machine, 1, .high)
        Self.queue(&machine, 2, .normal)
        _ = machine.addWaiter(1, member: 0, flight: high.flight)  // no such member: ended
        _ = machine.finish(high.flight)
        #expect(machine.priority(ofFlight: high.flight) == nil)
        #expect(Self.release(&machine) == [1], "queued at high, it still goes first")
    }
}
