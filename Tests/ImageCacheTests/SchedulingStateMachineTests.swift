@testable import ImageCache
import Testing

/// The stage limits, queues and priority graph, driven directly: waiters are plain numbers, and
/// the invariants are checked after every operation.
@Suite struct SchedulingStateMachineTests {
    typealias Machine = SchedulingStateMachine<Int>

    static func machine(
        processing: Int = 1, downloads: Int = 4, perHost: Int = 2, bytes: Int = 1000, capacity: Int = 1000
    ) -> Machine {
        Machine(limits: .init(
            running: [.processing: processing, .download: downloads, .diskRead: 1, .diskWrite: 1],
            downloadsPerHost: perHost, waitingOriginalBytes: bytes, queueCapacity: capacity
        ))
    }

    /// Queues `waiter` for a new flight node attached to a new caller of `priority`.
    @discardableResult
    static func queue(
        _ machine: inout Machine, _ waiter: Int, _ priority: ImageRequest.Priority, stage: Machine.Stage = .processing,
        host: String? = nil
    ) -> (caller: Machine.Node, id: Machine.EntryID, action: Machine.EnqueueAction, refused: Int?) {
        let caller = machine.makeCaller(priority)
        let flight = Machine.Node.flight(UInt64(waiter) + 1_000_000)
        machine.attach(caller, to: flight, wantsMemory: true)
        let id = machine.makeID()
        let (action, refused) = machine.enqueue(stage, id: id, node: flight, host: host, waiter: waiter)
        #expect(machine.invariantViolation() == nil)
        return (caller, id, action, refused)
    }

    @Test func aVeryHighRequestQueuedAfterAHundredLowOnesStartsNext() {
        var machine = Self.machine()
        let step1 = machine.tryStart(.processing, host: nil)
        #expect(step1)
        for waiter in 0..<100 { Self.queue(&machine, waiter, .low) }
        Self.queue(&machine, 100, .veryHigh)
        let step2 = machine.release(.processing, host: nil)
        #expect(step2 == [100])
        let step3 = machine.release(.processing, host: nil)
        #expect(step3 == [0])  // then first in, first out
        let step4 = machine.release(.processing, host: nil)
        #expect(step4 == [1])
        #expect(machine.invariantViolation() == nil)
        #expect(machine.stats.processing.maxRunning == 1)
        #expect(machine.stats.processing.maxQueued == 101)
    }

    @Test func raisingAWaitingCallersPriorityMovesItsWork() {
        var machine = Self.machine()
        let step1 = machine.tryStart(.processing, host: nil)
        #expect(step1)
        var callers: [Machine.Node] = []
        for waiter in 0..<10 { callers.append(Self.queue(&machine, waiter, .low).caller) }
        machine.setPriority(.high, of: callers[7])
        #expect(machine.invariantViolation() == nil)
        let step2 = machine.release(.processing, host: nil)
        #expect(step2 == [7])
        machine.setPriority(.veryLow, of: callers[0])
        let step3 = machine.release(.processing, host: nil)
        #expect(step3 == [1])
    }

    @Test func sharedWorkRunsAtTheHighestPriorityOfItsWaiters() {
        var machine = Self.machine()
        let flight = Machine.Node.flight(1)
        let low = machine.makeCaller(.low)
        let high = machine.makeCaller(.high)
        machine.attach(low, to: flight, wantsMemory: false)
        #expect(machine.priority(of: flight) == .low)
        #expect(!machine.wantsMemory(flight))
        machine.attach(high, to: flight, wantsMemory: true)
        #expect(machine.priority(of: flight) == .high)
        #expect(machine.wantsMemory(flight))
        machine.detach(high, from: flight, wantedMemory: true)
        #expect(machine.priority(of: flight) == .low)
        #expect(machine.invariantViolation() == nil)
        machine.detach(low, from: flight)
        #expect(machine.priority(of: flight) == nil)  // nothing attached: gone
        #expect(machine.invariantViolation() == nil)
    }

    @Test func anOriginalFollowsThePriorityOfTheVariantsMadeFromIt() {
        var machine = Self.machine()
        let caller = machine.makeCaller(.low)
        let variant = Machine.Node.flight(1)
        let original = Machine.Node.flight(2)
        machine.attach(caller, to: variant, wantsMemory: true)
        machine.attach(variant, to: original, wantsMemory: true)
        #expect(machine.priority(of: original) == .low)
        machine.setPriority(.veryHigh, of: caller)
        #expect(machine.priority(of: original) == .veryHigh)
        #expect(machine.invariantViolation() == nil)
        machine.removeCaller(caller)
        #expect(machine.priority(of: variant) == nil)
        #expect(machine.priority(of: original) == nil)
        #expect(machine.invariantViolation() == nil)
    }

    @Test func aCancelledWaiterLeavesWithoutStarting() {
        var machine = Self.machine()
        let step1 = machine.tryStart(.processing, host: nil)
        #expect(step1)
        let first = Self.queue(&machine, 1, .normal)
        Self.queue(&machine, 2, .normal)
        #expect(machine.startOrder(.processing).count == 2)
        let step2 = machine.cancel(.processing, id: first.id)
        #expect(step2 == 1)
        let step3 = machine.cancel(.processing, id: first.id)
        #expect(step3 == nil)  // once
        let step4 = machine.release(.processing, host: nil)
        #expect(step4 == [2])
        #expect(machine.stats.processing.queued == 0)
        #expect(machine.invariantViolation() == nil)
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
        #expect(machine.stats.processing.refused == 3)
        #expect(machine.stats.processing.queued == 4)
        let step2 = machine.release(.processing, host: nil)
        #expect(step2 == [6])
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
        let step5 = machine.release(.download, host: "a")
        #expect(step5 == [1])
        #expect(machine.stats.maxDownloadsOnOneHost == 2)
        // Originals waiting for processing over the budget: nothing starts until they go.
        machine.holdOriginal(bytes: 1500)
        let step6 = machine.release(.download, host: "b")
        #expect(step6 == [])
        #expect(machine.invariantViolation() == nil)
        let step7 = machine.releaseOriginal(bytes: 1500)
        #expect(step7 == [2])
        #expect(machine.stats.maxWaitingOriginalBytes == 1500)
        #expect(machine.invariantViolation() == nil)
    }
}
