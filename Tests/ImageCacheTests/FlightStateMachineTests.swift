@testable import ImageCache
import Testing
import TestSupport

/// The single-flight bookkeeping, driven directly: no tasks, no gates, no clocks. Waiters are
/// plain numbers and work is a name; the invariants are checked after every operation.
@Suite struct FlightStateMachineTests {
    struct Failure: Error, Equatable { let reason: String }
    typealias Machine = FlightStateMachine<Int, String, Failure, Int>

    var machine = Machine()

    mutating func step<T>(_ operation: (inout Machine) -> T) -> T {
        let result = operation(&machine)
        #expect(machine.invariantViolation() == nil, "\(machine.invariantViolation() ?? "")")
        return result
    }

    mutating func lead(_ key: String = "k") throws -> UInt64 {
        guard case let .lead(id) = step({ $0.begin(key, now: 0, retrying: false) }) else {
            throw Failure(reason: "expected to lead")
        }
        return id
    }

    mutating func handOff(_ id: UInt64, key: String = "k", cancelled: Bool = false) -> Bool {
        step { $0.handOff(key, flight: id, leaderCancelled: cancelled) { "work-\(id)" } }
    }

    @Test mutating func theFirstCallerLeadsAndLaterOnesJoin() throws {
        let id = try lead()
        #expect(step { $0.begin("k", now: 0, retrying: false) } == .join(id))
        #expect(step { $0.begin("other", now: 0, retrying: false) } != .join(id))
    }

    @Test mutating func anInlineHitAnswersEveryoneWhoJoined() throws {
        let id = try lead()
        #expect(step { $0.begin("k", now: 0, retrying: false) } == .join(id))
        guard case .waiting = step({ $0.addWaiter(7, id: 100, to: "k", flight: id) }) else { Issue.record("not waiting"); return }
        #expect(step { $0.waiterCount("k") } == 1)
        #expect(step { $0.finish("k", flight: id) } == [7])
        #expect(machine.flights.isEmpty && machine.failures.isEmpty)
        // The next caller leads a new flight.
        #expect(try lead() != id)
    }

    @Test mutating func workOutlivesTheLeaderAndAnswersAllWaiters() throws {
        let id = try lead()
        #expect(handOff(id))
        #expect(machine.flights["k"]?.work == "work-\(id)")
        guard case .waiting = step({ $0.addWaiter(1, id: 10, to: "k", flight: id) }) else { Issue.record("leader not waiting"); return }
        _ = step { $0.begin("k", now: 0, retrying: false) }
        guard case .waiting = step({ $0.addWaiter(2, id: 11, to: "k", flight: id) }) else { Issue.record("joiner not waiting"); return }
        #expect(Set(step { $0.finish("k", flight: id) } ?? []) == [1, 2])
    }

    @Test mutating func aFailureIsRememberedUntilItsExpiryUnlessRetried() throws {
        let id = try lead()
        #expect(handOff(id))
        _ = step { $0.addWaiter(1, id: 10, to: "k", flight: id) }
        #expect(step { $0.finish("k", flight: id, remembering: (Failure(reason: "500"), until: 5)) } == [1])
        #expect(step { $0.begin("k", now: 4, retrying: false) } == .fail(Failure(reason: "500")))
        #expect(step { $0.failure("k", now: 4) }?.until == 5)
        #expect(step { $0.failure("k", now: 5) } == nil)
        // Retrying forgets it at once; expiry forgets it on the next begin.
        guard case .lead = step({ $0.begin("k", now: 4, retrying: true) }) else { Issue.record("retry did not lead"); return }
        #expect(machine.failures.isEmpty)
    }

    @Test mutating func anExpiredFailureStartsAFreshFlight() throws {
        let id = try lead()
        _ = step { $0.finish("k", flight: id, remembering: (Failure(reason: "404"), until: 300)) }
        guard case .lead = step({ $0.begin("k", now: 300, retrying: false) }) else { Issue.record("expired failure still answered"); return }
    }

    @Test mutating func forgettingFailures() throws {
        for key in ["a", "b"] {
            let id = try lead(key)
            _ = step { $0.finish(key, flight: id, remembering: (Failure(reason: key), until: 10)) }
        }
        step { $0.forgetFailure("a") }
        #expect(step { $0.failure("a", now: 0) } == nil && step { $0.failure("b", now: 0) } != nil)
        step { $0.forgetFailures() }
        #expect(machine.failures.isEmpty)
    }

    @Test mutating func oneWaiterCancellingLeavesTheOthersWaiting() throws {
        let id = try lead()
        #expect(handOff(id))
        _ = step { $0.addWaiter(1, id: 10, to: "k", flight: id) }
        _ = step { $0.begin("k", now: 0, retrying: false) }
        _ = step { $0.addWaiter(2, id: 11, to: "k", flight: id) }
        guard case .resume(1) = step({ $0.cancel(10, of: "k", flight: id) }) else { Issue.record("not resumed alone"); return }
        #expect(step { $0.finish("k", flight: id) } == [2])
    }

    @Test mutating func theLastWaiterCancellingCancelsTheWork() throws {
        let id = try lead()
        #expect(handOff(id))
        _ = step { $0.addWaiter(1, id: 10, to: "k", flight: id) }
        guard case .resumeAndCancelWork(1, "work-\(id)") = step({ $0.cancel(10, of: "k", flight: id) }) else {
            Issue.record("work not cancelled")
            return
        }
        #expect(machine.flights.isEmpty)
        // The cancelled work's own finish is stale: no waiter, nothing remembered.
        #expect(step { $0.finish("k", flight: id, remembering: (Failure(reason: "cancelled"), until: 9)) } == nil)
        #expect(machine.failures.isEmpty)
    }

    @Test mutating func aWaiterCancellingWhileTheLeaderReadsTheDiskCancelsNothing() throws {
        let id = try lead()
        _ = step { $0.begin("k", now: 0, retrying: false) }
        _ = step { $0.addWaiter(2, id: 11, to: "k", flight: id) }
        guard case .resume(2) = step({ $0.cancel(11, of: "k", flight: id) }) else { Issue.record("not resumed"); return }
        #expect(machine.flights["k"] != nil, "the leader still leads the flight")
        #expect(step { $0.finish("k", flight: id) } == [])
    }

    @Test mutating func aCallerOnItsWayToJoinKeepsTheWorkAlive() throws {
        let id = try lead()
        #expect(handOff(id))
        _ = step { $0.addWaiter(1, id: 10, to: "k", flight: id) }
        #expect(step { $0.begin("k", now: 0, retrying: false) } == .join(id))  // told to join, not added yet
        guard case .resume(1) = step({ $0.cancel(10, of: "k", flight: id) }) else { Issue.record("work was cancelled"); return }
        guard case .waiting = step({ $0.addWaiter(2, id: 11, to: "k", flight: id) }) else { Issue.record("joiner not waiting"); return }
        #expect(step { $0.finish("k", flight: id) } == [2])
    }

    @Test mutating func aCancellationBeforeTheAddIsRememberedOnTheFlight() throws {
        let id = try lead()
        #expect(handOff(id))
        // The leader's task was cancelled before it added itself: the add fails at once and,
        // with nobody else interested, the work is cancelled.
        guard case .none = step({ $0.cancel(10, of: "k", flight: id) }) else { Issue.record("resumed a waiter never added"); return }
        guard case .cancelled(cancelWork: "work-\(id)") = step({ $0.addWaiter(1, id: 10, to: "k", flight: id) }) else {
            Issue.record("early cancellation lost")
            return
        }
        #expect(machine.flights.isEmpty)
    }

    @Test mutating func anEarlyCancellationWithOthersWaitingCancelsOnlyItself() throws {
        let id = try lead()
        #expect(handOff(id))
        _ = step { $0.begin("k", now: 0, retrying: false) }
        _ = step { $0.addWaiter(2, id: 11, to: "k", flight: id) }
        _ = step { $0.cancel(10, of: "k", flight: id) }
        guard case .cancelled(cancelWork: nil) = step({ $0.addWaiter(1, id: 10, to: "k", flight: id) }) else {
            Issue.record("expected the leader alone to be cancelled")
            return
        }
        #expect(step { $0.finish("k", flight: id) } == [2])
    }

    @Test mutating func aCancelledLeaderWithNobodyElseStartsNothing() throws {
        let id = try lead()
        #expect(!handOff(id, cancelled: true))
        #expect(machine.flights.isEmpty)
    }

    @Test mutating func aCancelledLeaderStillStartsTheWorkForOthers() throws {
        let id = try lead()
        _ = step { $0.begin("k", now: 0, retrying: false) }
        #expect(handOff(id, cancelled: true))
        #expect(machine.flights["k"]?.work == "work-\(id)")
    }

    @Test mutating func addingToAFlightThatEndedSaysSo() throws {
        let id = try lead()
        _ = step { $0.begin("k", now: 0, retrying: false) }
        _ = step { $0.finish("k", flight: id) }
        guard case .ended = step({ $0.addWaiter(2, id: 11, to: "k", flight: id) }) else { Issue.record("expected ended"); return }
        let next = try lead()
        guard case .ended = step({ $0.addWaiter(2, id: 12, to: "k", flight: id) }) else { Issue.record("joined the wrong flight"); return }
        guard case .none = step({ $0.cancel(12, of: "k", flight: id) }) else { Issue.record("cancelled in the wrong flight"); return }
        #expect(machine.flights["k"]?.id == next && machine.flights["k"]?.cancelledEarly.isEmpty == true)
    }

    /// Every interleaving a seeded random walk reaches over two keys and up to 40 callers:
    /// after each step the invariants hold; in the end every caller was answered exactly once,
    /// and work was cancelled only when nobody wanted it any more.
    @Test(arguments: 0..<40) mutating func randomInterleavingsKeepEveryPromise(seed: UInt64) {
        enum Caller { case pending(key: String, flight: UInt64, leader: Bool), waiting(key: String, flight: UInt64), answered }
        var random = SplitMix(seed: seed)
        var callers: [Int: Caller] = [:]
        var leaders: [String: (caller: Int, flight: UInt64)] = [:]  // leading, before hand-off
        var answers: [Int: Int] = [:]
        var cancelledWork: Set<String> = []
        var now = 0
        var nextCaller = 0
        func answer(_ caller: Int) {
            answers[caller, default: 0] += 1
            callers[caller] = .answered
        }
        for _ in 0..<400 {
            let key = random.next() % 2 == 0 ? "a" : "b"
            switch random.next() % 7 {
            case 0 where nextCaller < 40:
                let caller = nextCaller
                nextCaller += 1
                switch step({ $0.begin(key, now: now, retrying: random.next() % 5 == 0) }) {
                case .fail: answer(caller)
                case let .join(flight): callers[caller] = .pending(key: key, flight: flight, leader: false)
                case let .lead(flight):
                    leaders[key] = (caller, flight)
                    callers[caller] = .waiting(key: key, flight: flight)  // waits on its own stage
                }
            case 1:  // a pending caller adds itself
                guard let (caller, state) = callers.first(where: { if case .pending = $0.value { true } else { false } }),
                      case let .pending(key, flight, _) = state else { continue }
                switch step({ $0.addWaiter(caller, id: UInt64(1_000 + caller), to: key, flight: flight) }) {
                case .waiting: callers[caller] = .waiting(key: key, flight: flight)
                case .ended: callers[caller] = nil  // looks up again as a new caller would; drop it
                case let .cancelled(work):
                    answer(caller)
                    if let work { cancelledWork.insert(work) }
                }
            case 2:  // somebody cancels
                guard let caller = callers.keys.randomElement(using: &random) else { continue }
                switch callers[caller] {
                case let .pending(key, flight, _), let .waiting(key, flight):
                    if leaders[key]?.caller == caller { continue }  // a leader in its own stage does not wait yet
                    switch step({ $0.cancel(UInt64(1_000 + caller), of: key, flight: flight) }) {
                    case .none: break
                    case let .resume(waiter): answer(waiter)
                    case let .resumeAndCancelWork(waiter, work):
                        answer(waiter)
                        if let work { cancelledWork.insert(work) }
                    }
                default: continue
                }
            case 3:  // a leader's disk missed: hand off, then wait as a pending joiner
                guard let leader = leaders[key] else { continue }
                leaders[key] = nil
                if step({ $0.handOff(key, flight: leader.flight, leaderCancelled: false) { "work-\(leader.flight)" } }) {
                    callers[leader.caller] = .pending(key: key, flight: leader.flight, leader: true)
                } else {
                    answer(leader.caller)
                }
            case 4:  // a leader's disk hit: finish inline
                guard let leader = leaders[key] else { continue }
                leaders[key] = nil
                answer(leader.caller)
                for waiter in step({ $0.finish(key, flight: leader.flight) }) ?? [] { answer(waiter) }
            case 5:  // work finishes, well or badly
                guard leaders[key] == nil, let flight = machine.flights[key], flight.work != nil else { continue }
                let failure = random.next() % 2 == 0 ? (Failure(reason: "x"), until: now + 3) : nil
                for waiter in step({ $0.finish(key, flight: flight.id, remembering: failure) }) ?? [] { answer(waiter) }
            default:
                now += 1
            }
            #expect(answers.values.allSatisfy { $0 == 1 }, "a caller was answered twice")
            for work in cancelledWork {
                #expect(!machine.flights.values.contains { $0.work == work }, "cancelled work is still running")
            }
        }
        // Wind down: leaders hand off, everybody pending adds, all work finishes.
        for (key, leader) in leaders {
            if step({ $0.handOff(key, flight: leader.flight, leaderCancelled: false) { "work-\(leader.flight)" } }) {
                callers[leader.caller] = .pending(key: key, flight: leader.flight, leader: true)
            } else {
                answer(leader.caller)
            }
        }
        for (caller, state) in callers {
            guard case let .pending(key, flight, _) = state else { continue }
            switch step({ $0.addWaiter(caller, id: UInt64(1_000 + caller), to: key, flight: flight) }) {
            case .waiting: callers[caller] = .waiting(key: key, flight: flight)
            case .ended: callers[caller] = nil
            case .cancelled: answer(caller)
            }
        }
        for (key, flight) in machine.flights {
            for waiter in step({ $0.finish(key, flight: flight.id) }) ?? [] { answer(waiter) }
        }
        #expect(machine.flights.isEmpty)
        for (caller, state) in callers {
            if case .answered = state { continue }
            Issue.record("caller \(caller) was never answered: \(state)")
        }
        #expect(answers.values.allSatisfy { $0 == 1 })
    }
}
