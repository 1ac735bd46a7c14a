@testable import ImageCache
import Testing
import TestSupport

/// Every interleaving a seeded random walk reaches over an original, a variant made from it and
/// another key, with up to 40 callers (tasks whose priority changes, and fixed priorities), the
/// variant's work asking for its original, and work queued for one processing slot. After each
/// step the invariants hold, each flight's priority is the highest its members bring (computed
/// here from the walk's own record, not the machine's), and a freed slot goes to the most urgent
/// queued work. In the end every caller was answered exactly once, every queued entry started
/// or left once, and work was cancelled only when nobody wanted it any more.
@Suite struct PipelineStateMachineInterleavingTests {
    typealias Machine = PipelineStateMachine<PlainHandles>
    typealias Priority = ImageRequest.Priority

    enum Phase { case leading, pending, waiting, answered }

    struct Caller {
        let key: String
        let flight: UInt64
        let member: UInt64
        var phase: Phase
        /// Its task, or `nil` for a fixed priority.
        let task: UInt64?
        let fixed: Priority
    }

    @Test(arguments: 0..<60) func randomInterleavingsKeepEveryPromise(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var machine = Machine(limits: ImagePipeline.Limits(
            downloads: 1, downloadsPerHost: 1, processing: 1, diskReads: 1, diskWrites: 1, waitingOriginalBytes: 1, queueCapacity: 1000
        ))
        var callers: [Int: Caller] = [:]
        var taskPriority: [UInt64: Priority] = [:]
        /// The variant flight whose work is a member of an original's flight, by caller number.
        var variantWork: [Int: UInt64] = [:]
        var answers: [Int: Int] = [:]
        var cancelledWork: Set<String> = []
        var queued: [UInt64: (flight: UInt64, waiter: Int)] = [:]  // entry -> what it is for
        var slotTaken = false
        var entryAnswers: [Int: Int] = [:]
        var now = 0
        var nextCaller = 0
        let priorities: [Priority] = [.veryLow, .low, .normal, .high, .veryHigh]

        func check(_ step: String) {
            if let violation = machine.invariantViolation() { Issue.record("\(step): \(violation)") }
            #expect(answers.values.allSatisfy { $0 == 1 }, "\(step): a caller was answered twice")
            #expect(entryAnswers.values.allSatisfy { $0 == 1 }, "\(step): an entry was resumed twice")
            for work in cancelledWork {
                #expect(!machine.flights.values.contains { $0.work == work }, "\(step): cancelled work is still running")
            }
            // Each flight's priority from this walk's own record of who is a member of it.
            for (id, flight) in machine.flights {
                var expected: [Priority] = []
                for (number, caller) in callers where caller.flight == id && caller.phase != .answered {
                    if let task = caller.task {
                        if let priority = taskPriority[task] { expected.append(priority) }
                    } else {
                        expected.append(caller.fixed)
                    }
                    if let variant = variantWork[number], let priority = machine.priority(ofFlight: variant) {
                        expected.append(priority)
                    }
                }
                #expect(flight.priority == expected.max() ?? .veryLow, "\(step): \(flight.key) runs at \(flight.priority)")
            }
        }
        func answer(_ number: Int) {
            answers[number, default: 0] += 1
            callers[number]?.phase = .answered
        }
        func answerAll(_ waiters: [Int]?) {
            for waiter in waiters ?? [] { answer(waiter) }
        }
        func begin(_ key: String, asker: Machine.Asker, task: UInt64?, fixed: Priority) -> Int {
            let number = nextCaller
            nextCaller += 1
            switch machine.begin(key, asker: asker, wantsMemory: true, now: now, retrying: random.next() % 5 == 0) {
            case .fail: answers[number] = 1
            case let .join(flight, member):
                callers[number] = Caller(key: key, flight: flight, member: member, phase: .pending, task: task, fixed: fixed)
            case let .lead(flight, member):
                callers[number] = Caller(key: key, flight: flight, member: member, phase: .leading, task: task, fixed: fixed)
            }
            return number
        }

        for round in 0..<500 {
            let key = ["a", "a#v", "b"][Int(random.next() % 3)]
            let operation = random.next() % 10
            switch operation {
            case 0 where nextCaller < 40:
                let priority = priorities[Int(random.next() % 5)]
                if random.next() % 2 == 0 {
                    let task = machine.makeTask(priority)
                    taskPriority[task] = priority
                    _ = begin(key, asker: .task(task), task: task, fixed: priority)
                } else {
                    _ = begin(key, asker: .fixed(priority), task: nil, fixed: priority)
                }
            case 1:  // a pending caller adds its waiter
                guard let (number, caller) = callers.first(where: { $0.value.phase == .pending }) else { continue }
                switch machine.addWaiter(number, member: caller.member, flight: caller.flight) {
                case .waiting: callers[number]!.phase = .waiting
                case .ended: callers[number] = nil  // looks up again as a new caller would; drop it
                case let .cancelled(work):
                    answer(number)
                    if let work { cancelledWork.insert(work) }
                }
            case 2:  // somebody cancels; a leader in its own stage does not wait yet
                guard let number = callers.keys.randomElement(using: &random), let caller = callers[number],
                      caller.phase == .pending || caller.phase == .waiting else { continue }
                switch machine.cancel(caller.member, of: caller.flight) {
                case .none: break
                case let .resume(waiter): answer(waiter)
                case let .resumeAndCancelWork(waiter, work):
                    answer(waiter)
                    if let work { cancelledWork.insert(work) }
                }
            case 3:  // a leader's disk missed: hand off, then wait; a variant's work asks for its original
                guard let (number, caller) = callers.first(where: { $0.value.key == key && $0.value.phase == .leading }) else { continue }
                if machine.handOff(caller.flight, leader: caller.member, leaderCancelled: false, start: { "work-\(caller.flight)" }) {
                    callers[number]!.phase = .pending
                    if key == "a#v" {
                        let work = begin("a", asker: .flight(caller.flight), task: nil, fixed: .veryLow)
                        if callers[work] != nil { variantWork[work] = caller.flight }
                    }
                } else {
                    answer(number)
                }
            case 4:  // a leader's disk hit: finish inline
                guard let (number, caller) = callers.first(where: { $0.value.key == key && $0.value.phase == .leading }) else { continue }
                answer(number)
                answerAll(machine.finish(caller.flight))
            case 5:  // a handed-off flight's work queues for the processing slot
                guard let flight = machine.flight(forKey: key), flight.work != nil else { continue }
                let entry = machine.makeID()
                let waiter = 10_000 + Int(entry)
                switch machine.enqueue(.processing, id: entry, flight: flight.id, host: nil, waiter: waiter).action {
                case .start:
                    #expect(!slotTaken, "two works hold the one slot")
                    slotTaken = true
                    entryAnswers[waiter, default: 0] += 1
                case .waiting: queued[entry] = (flight.id, waiter)
                case .refused: Issue.record("refused below the capacity")
                }
            case 6:  // the slot frees: the most urgent queued work starts
                guard slotTaken else {
                    if machine.tryStart(.processing, host: nil) { slotTaken = true }
                    continue
                }
                let best = queued.values.map { (machine.priority(ofFlight: $0.flight), $0.waiter) }
                let started = machine.release(.processing, host: nil)
                slotTaken = !started.isEmpty
                #expect(started.count <= 1)
                for entry in started {
                    entryAnswers[entry.waiter, default: 0] += 1
                    queued[entry.id] = nil
                    // Among entries whose flight still runs, none is more urgent.
                    if let priority = machine.priority(ofFlight: entry.flight) {
                        #expect(!best.contains { ($0.0 ?? .veryLow) > priority }, "round \(round): a less urgent entry started first")
                    }
                }
            case 7:  // a handed-off flight's work finishes, well or badly
                guard let flight = machine.flight(forKey: key), flight.work != nil else { continue }
                let failure = random.next() % 2 == 0 ? (PlainHandles.Failure(reason: "x"), until: now + 3) : nil
                answerAll(machine.finish(flight.id, remembering: failure))
                for (number, caller) in callers where caller.flight == flight.id && caller.phase == .pending {
                    callers[number] = nil  // its add will say `ended`: it looks up again
                }
                // The variant's work that waited for this original is answered with it.
                for (number, variant) in variantWork where callers[number] == nil || callers[number]?.phase == .answered {
                    _ = variant
                    variantWork[number] = nil
                }
            case 8:  // a task's priority changes
                guard let task = taskPriority.keys.randomElement(using: &random) else { continue }
                let priority = priorities[Int(random.next() % 5)]
                taskPriority[task] = priority
                machine.setPriority(priority, ofTask: task)
            case 9:  // queued work is cancelled
                guard let (entry, value) = queued.first else { continue }
                if let left = machine.leave(.processing, id: entry) {
                    #expect(left.waiter == value.waiter)
                    entryAnswers[left.waiter, default: 0] += 1
                }
                queued[entry] = nil
            default:
                now += 1
            }
            check("round \(round), operation \(operation)")
        }

        // Wind down: leaders hand off, everybody pending adds, queued work starts, all work finishes.
        for (number, caller) in callers where caller.phase == .leading {
            if machine.handOff(caller.flight, leader: caller.member, leaderCancelled: false, start: { "work-\(caller.flight)" }) {
                callers[number]!.phase = .pending
            } else {
                answer(number)
            }
        }
        for (number, caller) in callers where caller.phase == .pending {
            switch machine.addWaiter(number, member: caller.member, flight: caller.flight) {
            case .waiting: callers[number]!.phase = .waiting
            case .ended: callers[number] = nil
            case .cancelled: answer(number)
            }
        }
        check("wind-down adds")
        while slotTaken {
            let started = machine.release(.processing, host: nil)
            slotTaken = !started.isEmpty
            for entry in started {
                entryAnswers[entry.waiter, default: 0] += 1
                queued[entry.id] = nil
            }
        }
        #expect(queued.isEmpty, "queued work never started")
        for id in machine.flights.keys { answerAll(machine.finish(id)) }
        check("wind-down")
        #expect(machine.flights.isEmpty && machine.flightByKey.isEmpty)
        for (number, caller) in callers where caller.phase != .answered {
            Issue.record("caller \(number) was never answered: \(caller.phase)")
        }
    }

    /// Downloads over two hosts, seeded: a total limit (3), a per-host limit (2), the budget of
    /// original bytes waiting for processing (100), and a queue of 4 where background work makes
    /// room or is refused and other work waits past it with a deadline; entries leave or expire,
    /// and the priorities of the flights they are for change while they wait. After every step
    /// the invariants hold and this walk's own record of what runs keeps every limit; a start
    /// takes the most urgent entry of its host, earliest first among equals, and none happens
    /// while the waiting bytes are over the budget. In the end every entry was started,
    /// refused, left or expired exactly once.
    @Test(arguments: 0..<60) func randomDownloadsKeepEveryLimitAndTheirOrder(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var machine = Machine(limits: ImagePipeline.Limits(
            downloads: 3, downloadsPerHost: 2, processing: 1, diskReads: 1, diskWrites: 1, waitingOriginalBytes: 100, queueCapacity: 4
        ))
        let priorities: [Priority] = [.veryLow, .low, .normal, .high, .veryHigh]
        // Flights whose work downloads, each led by a task whose priority the walk changes.
        var flights: [(id: UInt64, task: UInt64)] = []
        for number in 0..<6 {
            let task = machine.makeTask(priorities[Int(random.next() % 5)])
            guard case let .lead(id, member) = machine.begin("k\(number)", asker: .task(task), wantsMemory: true, now: 0, retrying: false)
            else {
                Issue.record("a new key was not led")
                return
            }
            let handedOff = machine.handOff(id, leader: member, leaderCancelled: false, start: { "work-\(id)" })
            #expect(handedOff)
            flights.append((id, task))
        }
        var running: [UInt64: String] = [:]  // entry -> host
        var queued: [UInt64: (host: String, overCapacity: Bool)] = [:]
        var outcomes: [Int: Int] = [:]  // waiter -> times it was started, refused, left or expired
        var held: [Int] = []
        var entries = 0

        func started(_ list: [Machine.Entry], _ step: String) {
            let queue = machine.stages[.download].queue
            for entry in list {
                #expect(held.reduce(0, +) < 100, "\(step): a download started over the waiting bytes' budget")
                let wasQueued = queued.removeValue(forKey: entry.id) != nil
                #expect(wasQueued, "\(step): an entry started that was not queued")
                running[entry.id] = entry.host
                outcomes[entry.waiter, default: 0] += 1
                let priority = machine.priority(of: entry)
                for other in queue where other.host == entry.host {
                    let (p, q) = (machine.priority(of: other), priority)
                    #expect(p < q || (p == q && other.sequence > entry.sequence), "\(step): a less urgent entry of \(entry.host ?? "") started first")
                }
            }
        }
        func check(_ step: String) {
            if let violation = machine.invariantViolation() { Issue.record("\(step): \(violation)") }
            #expect(machine.stages[.download].running == running.count, "\(step): the machine and the walk disagree on what runs")
            #expect(machine.stages[.download].queue.count == queued.count, "\(step): the machine and the walk disagree on what waits")
            #expect(running.count <= 3, "\(step): over the total limit")
            for host in ["x", "y"] {
                #expect(running.values.filter { $0 == host }.count <= 2, "\(step): over the limit of host \(host)")
            }
            #expect(outcomes.values.allSatisfy { $0 == 1 }, "\(step): a waiter was answered twice")
        }

        for round in 0..<400 {
            let operation = random.next() % 10
            let step = "seed \(seed), round \(round), operation \(operation)"
            switch operation {
            case 0, 1, 2:  // work of a flight asks for a download slot
                let flight = flights[Int(random.next() % UInt64(flights.count))]
                let host = ["x", "y"][Int(random.next() % 2)]
                let entry = machine.makeID()
                entries += 1
                let waiter = Int(entry)
                let full = machine.stages[.download].queue.count >= 4
                let priority = machine.priority(ofFlight: flight.id) ?? .normal
                let (action, refused) = machine.enqueue(.download, id: entry, flight: flight.id, host: host, waiter: waiter)
                switch action {
                case .start:
                    #expect(held.reduce(0, +) < 100, "\(step): a download started over the waiting bytes' budget")
                    running[entry] = host
                    outcomes[waiter, default: 0] += 1
                case let .waiting(overCapacity):
                    queued[entry] = (host, overCapacity)
                    #expect(overCapacity == (full && refused == nil), "\(step): past the capacity only when full and nothing made room")
                    if overCapacity {
                        #expect(!priority.isBackground, "\(step): background work waits past the capacity")
                        let kept = machine.setDeadline("deadline-\(entry)", stage: .download, id: entry)
                        #expect(kept)
                    }
                case .refused:
                    #expect(full && priority.isBackground, "\(step): refused with room, or refused urgent work")
                    outcomes[waiter, default: 0] += 1
                }
                if let refused {
                    #expect(full, "\(step): an entry made room in a queue that had some")
                    #expect(refused.queuedPriority.isBackground || machine.priority(of: refused).isBackground)
                    #expect(machine.priority(of: refused) < priority, "\(step): an entry made room for one no more urgent")
                    let wasQueued = queued.removeValue(forKey: refused.id) != nil
                    #expect(wasQueued)
                    outcomes[refused.waiter, default: 0] += 1
                }
            case 3, 4:  // a download ends
                guard let (entry, host) = running.randomElement(using: &random) else { continue }
                running[entry] = nil
                started(machine.release(.download, host: host), step)
            case 5:  // an original arrives and waits for processing
                let bytes = 10 + Int(random.next() % 50)
                held.append(bytes)
                machine.holdOriginal(bytes: bytes)
            case 6:  // an original's variant is made: downloads may resume
                guard !held.isEmpty else { continue }
                let bytes = held.remove(at: Int(random.next() % UInt64(held.count)))
                started(machine.releaseOriginal(bytes: bytes), step)
            case 7:  // queued work is cancelled
                guard let entry = queued.keys.randomElement(using: &random) else { continue }
                let left = machine.leave(.download, id: entry)
                #expect(left?.id == entry)
                queued[entry] = nil
                if let left { outcomes[left.waiter, default: 0] += 1 }
            case 8:  // work waiting past the capacity reaches its deadline
                guard let entry = queued.first(where: { $0.value.overCapacity })?.key else { continue }
                let waiter = machine.expire(.download, id: entry)
                #expect(waiter == Int(entry))
                queued[entry] = nil
                if let waiter { outcomes[waiter, default: 0] += 1 }
            default:  // a flight's priority changes
                let flight = flights[Int(random.next() % UInt64(flights.count))]
                machine.setPriority(priorities[Int(random.next() % 5)], ofTask: flight.task)
            }
            check(step)
        }

        // Wind down: every original is processed, then every download ends.
        while !held.isEmpty { started(machine.releaseOriginal(bytes: held.removeLast()), "wind-down bytes") }
        while let (entry, host) = running.first {
            running[entry] = nil
            started(machine.release(.download, host: host), "wind-down")
        }
        check("wind-down")
        #expect(queued.isEmpty, "queued work never started")
        #expect(outcomes.count == entries, "an entry was never started, refused, left or expired")
    }
}
