import GalleryServer
import Testing

/// The gate tests hold the gallery's answers with: permits, the order it lets requests through,
/// cancellation, and how a test waits for requests to arrive at it.
@Suite struct ImageGateTests {
    @Test func waitingUntilHoldingReturnsOnceThatManyRequestsAreHeld() async throws {
        let gate = ImageGate()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await gate.pass() }
            group.addTask { try await gate.pass() }
            try await gate.waitUntilHolding(2)
            #expect(gate.status.waiting == 2 && gate.status.passed == 0)
            // Already true: returns at once.
            try await gate.waitUntilHolding(1)
            gate.release(2)
            try await group.waitForAll()
        }
        #expect(gate.status.waiting == 0 && gate.status.passed == 2 && gate.status.permits == 0)
    }

    @Test func aPermitLetsTheNextRequestThroughWithoutWaiting() async throws {
        let gate = ImageGate()
        gate.release(1)
        try await gate.pass()
        #expect(gate.status.passed == 1 && gate.status.permits == 0)
    }

    @Test func cancellingAWaitEndsItAndLeavesTheGateAsItWas() async throws {
        let gate = ImageGate()
        let held = Task { try await gate.pass() }
        try await gate.waitUntilHolding(1)
        held.cancel()
        await #expect(throws: CancellationError.self) { try await held.value }
        #expect(gate.status.waiting == 0 && gate.status.passed == 0)

        let unsatisfied = Task { try await gate.waitUntilHolding(1) }
        unsatisfied.cancel()
        await #expect(throws: CancellationError.self) { try await unsatisfied.value }
    }
}
