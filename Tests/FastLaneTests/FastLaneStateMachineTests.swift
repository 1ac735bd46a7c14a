@testable import FastLane
import NIOCore
import Testing
import TestSupport

/// The lane's decisions on one connection, driven directly: no channel, no loop, time given.
@Suite struct FastLaneStateMachineTests {
    typealias Machine = FastLaneStateMachine
    static let get = Machine.Head(isPlain: true, isKeepAlive: true, answering: .any)
    static let head = Machine.Head(isPlain: true, isKeepAlive: true, answering: .headOnly)
    static let connect = Machine.Head(isPlain: false, isKeepAlive: true, answering: .connect)
    static let post = Machine.Head(isPlain: false, isKeepAlive: true, answering: .any)
    static let closing = Machine.Head(isPlain: false, isKeepAlive: false, answering: .any)
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func machine(idleTimeout: TimeAmount? = nil) -> Machine {
        var machine = Machine(idleTimeout: idleTimeout)
        machine.wireFound()
        return machine
    }

    @Test func aPlainRequestIsAskedOfTheLaneAndItsEndIsDropped() {
        var machine = machine()
        #expect(machine.headReceived(Self.get, isWritable: true, now: Self.t0) == .askLane)
        #expect(machine.laneAnswered(now: Self.t0) == nil)
        #expect(machine.endReceived(now: Self.t0) == .drop)
        #expect(machine.readComplete() == .init(flush: true, fireReadComplete: false))
        // Nothing left to flush or tell at the next read's end.
        #expect(machine.readComplete() == .init(flush: false, fireReadComplete: false))
    }

    @Test func aRequestTheLaneDeclinesIsPassedOnWhole() {
        var machine = machine()
        #expect(machine.headReceived(Self.get, isWritable: true, now: Self.t0) == .askLane)
        machine.laneDeclined(Self.get)
        #expect(machine.bodyReceived(now: Self.t0) == .pass)
        #expect(machine.endReceived(now: Self.t0) == .pass)
        #expect(machine.readComplete() == .init(flush: false, fireReadComplete: true))
        #expect(machine.passedOn == 1 && machine.owed.count == 1)
    }

    @Test(arguments: [
        (Machine.Head(isPlain: false, isKeepAlive: true, answering: .any), true, true),  // not plain
        (get, false, true),  // the channel is not writable
        (get, true, false),  // no encoder before the lane
    ])
    func theLaneIsNotAskedWhenItMayNotAnswer(head: Machine.Head, isWritable: Bool, hasWire: Bool) {
        var machine = hasWire ? machine() : Machine(idleTimeout: nil)
        #expect(machine.headReceived(head, isWritable: isWritable, now: Self.t0) == .pass)
        #expect(machine.owed.count == (hasWire ? 1 : 0))
        #expect(machine.answerHead(statusCode: 200) == .forward)
    }

    @Test func behindARequestPassedOnEveryRequestWaitsItsTurn() {
        var machine = machine()
        #expect(machine.headReceived(Self.post, isWritable: true, now: Self.t0) == .pass)
        #expect(machine.endReceived(now: Self.t0) == .pass)
        // A hit pipelined behind it is not answered ahead of it.
        #expect(machine.headReceived(Self.get, isWritable: true, now: Self.t0) == .pass)
        #expect(machine.endReceived(now: Self.t0) == .pass)
        #expect(machine.passedOn == 2)
        for _ in 0..<2 {
            #expect(machine.answerHead(statusCode: 200) == .forward)
            #expect(machine.answerBody() == .forward)
            #expect(machine.answerEnd(now: Self.t0).0 == .forward)
        }
        // Everything answered: the lane may answer again.
        #expect(machine.headReceived(Self.get, isWritable: true, now: Self.t0) == .askLane)
    }

    @Test func aPassedOnHeadOrConnectIsAnsweredWithoutABody() {
        var machine = machine()
        _ = machine.headReceived(Self.head, isWritable: false, now: Self.t0)
        _ = machine.headReceived(Self.connect, isWritable: true, now: Self.t0)
        // A 100 Continue stands for no answer: the HEAD's answer is still the next.
        #expect(machine.answerHead(statusCode: 100) == .forward)
        #expect(machine.answerHead(statusCode: 404) == .writeBodiless(connect: false))
        #expect(machine.answerBody() == .fail)
        #expect(machine.answerEnd(now: Self.t0).0 == .completeEmpty)
        #expect(machine.answerHead(statusCode: 200) == .writeBodiless(connect: true))
        #expect(machine.answerEnd(now: Self.t0).0 == .completeEmpty)
        #expect(machine.passedOn == 0 && machine.owed.isEmpty)
    }

    @Test func afterARequestThatMayCloseTheConnectionEverythingIsPassedOn() {
        var machine = machine()
        _ = machine.headReceived(Self.closing, isWritable: true, now: Self.t0)
        _ = machine.endReceived(now: Self.t0)
        _ = machine.answerHead(statusCode: 200)
        _ = machine.answerEnd(now: Self.t0)
        #expect(machine.passedOn == 0)
        #expect(machine.headReceived(Self.get, isWritable: true, now: Self.t0) == .pass)
    }

    // The idle time-out.

    @Test func withoutATimeOutNoCheckIsEverScheduled() {
        var machine = machine()
        #expect(machine.connectionActive(now: Self.t0) == nil)
        _ = machine.headReceived(Self.get, isWritable: true, now: Self.t0)
        #expect(machine.laneAnswered(now: Self.t0) == nil)
        #expect(machine.idleCheckFired(now: Self.t0 + .hours(1)) == .none)
    }

    @Test func anIdleConnectionIsClosedAndActivityPutsTheCheckOff() {
        var machine = machine(idleTimeout: .seconds(1))
        #expect(machine.connectionActive(now: Self.t0) == Self.t0 + .seconds(1))
        // A check is already scheduled: activity moves the deadline, not the check.
        _ = machine.headReceived(Self.get, isWritable: true, now: Self.t0 + .milliseconds(600))
        #expect(machine.laneAnswered(now: Self.t0 + .milliseconds(600)) == nil)
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(1)) == .check(at: Self.t0 + .milliseconds(1600)))
        #expect(machine.idleCheckFired(now: Self.t0 + .milliseconds(1600)) == .close)
    }

    /// A large answer going out slowly: each check that finds fewer bytes waiting than the last
    /// puts the close off; one that finds as many (the client took nothing) closes.
    @Test func anAnswerStillGoingOutPutsTheCheckOffWhileItShrinks() {
        var machine = machine(idleTimeout: .seconds(1))
        _ = machine.connectionActive(now: Self.t0)
        _ = machine.headReceived(Self.get, isWritable: true, now: Self.t0)
        #expect(machine.laneAnswered(now: Self.t0) == nil)
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(1), waitingBytes: 9_000_000) == .check(at: Self.t0 + .seconds(2)))
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(2), waitingBytes: 5_000_000) == .check(at: Self.t0 + .seconds(3)))
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(3), waitingBytes: 5_000_000) == .close)
    }

    @Test func aNewAnswerStartsTheCountOfWaitingBytesAgain() {
        var machine = machine(idleTimeout: .seconds(1))
        _ = machine.connectionActive(now: Self.t0)
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(1), waitingBytes: 100) == .check(at: Self.t0 + .seconds(2)))
        _ = machine.headReceived(Self.get, isWritable: true, now: Self.t0 + .milliseconds(1500))
        _ = machine.laneAnswered(now: Self.t0 + .milliseconds(1500))
        // The answer moved the deadline; then more bytes wait than at the last check, but an
        // answer came between: a first sight again, not a client that stopped taking them.
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(2), waitingBytes: 5_000) == .check(at: Self.t0 + .milliseconds(2500)))
        #expect(machine.idleCheckFired(now: Self.t0 + .milliseconds(2500), waitingBytes: 5_000) == .check(at: Self.t0 + .milliseconds(3500)))
        #expect(machine.idleCheckFired(now: Self.t0 + .milliseconds(3500), waitingBytes: 0) == .close)
    }

    @Test func anAnswerStillBeingMadeKeepsTheConnectionOpenAndItsEndStartsTheWait() {
        var machine = machine(idleTimeout: .seconds(1))
        _ = machine.connectionActive(now: Self.t0)
        _ = machine.headReceived(Self.post, isWritable: true, now: Self.t0)
        _ = machine.endReceived(now: Self.t0)
        // Nothing going out yet: the answer is being made. Left open, and checked again.
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(10)) == .check(at: Self.t0 + .seconds(11)))
        _ = machine.answerHead(statusCode: 200)
        let (_, check) = machine.answerEnd(now: Self.t0 + .milliseconds(10_500))
        #expect(check == nil, "a check is scheduled already: the answer moves its deadline")
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(11)) == .check(at: Self.t0 + .milliseconds(11_500)))
        #expect(machine.idleCheckFired(now: Self.t0 + .milliseconds(11_500)) == .close)
    }

    /// A client that pipelines requests and reads none of the answers: once they stop going out,
    /// owed answers keep the connection no longer than answers the lane wrote.
    @Test func answersOwedThatTheClientNeverTakesDoNotHoldTheConnection() {
        var machine = machine(idleTimeout: .seconds(1))
        _ = machine.connectionActive(now: Self.t0)
        for _ in 0..<2 {
            _ = machine.headReceived(Self.post, isWritable: true, now: Self.t0)
            _ = machine.endReceived(now: Self.t0)
        }
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(1)) == .check(at: Self.t0 + .seconds(2)), "being made")
        // The first answer's head and part of its body went out; its end waits behind them.
        _ = machine.answerHead(statusCode: 200)
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(2), waitingBytes: 200_000) == .check(at: Self.t0 + .seconds(3)))
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(3), waitingBytes: 200_000) == .close)
        #expect(machine.passedOn == 2)
    }

    /// An event stream to a client reading a little slower than events come: more bytes wait at each
    /// check, but the client took some since the last (the bytes sent on, less those waiting, grew).
    @Test func bytesTakenWhileMoreWaitAreActivity() {
        var machine = machine(idleTimeout: .seconds(1))
        _ = machine.connectionActive(now: Self.t0)
        _ = machine.headReceived(Self.get, isWritable: true, now: Self.t0)
        machine.laneDeclined(Self.get)
        _ = machine.endReceived(now: Self.t0)
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(1), waitingBytes: 20_000, takenBytes: 10_000) == .check(at: Self.t0 + .seconds(2)))
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(2), waitingBytes: 30_000, takenBytes: 15_000) == .check(at: Self.t0 + .seconds(3)))
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(3), waitingBytes: 40_000, takenBytes: 15_000) == .close, "took nothing since")
    }

    /// Hummingbird refills the channel whenever it drains below its low mark: more bytes may wait
    /// at a check than at the last one although the client took some. The channel becoming
    /// writable again says so.
    @Test func theChannelBecomingWritableAgainIsActivity() {
        var machine = machine(idleTimeout: .seconds(1))
        _ = machine.connectionActive(now: Self.t0)
        _ = machine.headReceived(Self.post, isWritable: true, now: Self.t0)
        _ = machine.endReceived(now: Self.t0)
        _ = machine.answerHead(statusCode: 200)
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(1), waitingBytes: 60_000) == .check(at: Self.t0 + .seconds(2)))
        machine.outputDrained(now: Self.t0 + .milliseconds(1500))
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(2), waitingBytes: 65_000) == .check(at: Self.t0 + .milliseconds(2500)))
        #expect(machine.idleCheckFired(now: Self.t0 + .milliseconds(2500), waitingBytes: 65_000) == .check(at: Self.t0 + .milliseconds(3500)))
        #expect(machine.idleCheckFired(now: Self.t0 + .milliseconds(3500), waitingBytes: 65_000) == .close)
    }

    @Test func aRequestHalfReadIsIdleToo() {
        var machine = machine(idleTimeout: .seconds(1))
        _ = machine.connectionActive(now: Self.t0)
        _ = machine.headReceived(Self.post, isWritable: true, now: Self.t0 + .milliseconds(900))
        #expect(machine.idleCheckFired(now: Self.t0 + .seconds(1)) == .check(at: Self.t0 + .milliseconds(1900)))
        #expect(machine.idleCheckFired(now: Self.t0 + .milliseconds(1900)) == .close)
    }

    /// Random clients and a random Hummingbird on one connection, by seed: whatever the lane
    /// answers and whenever Hummingbird answers, the answers leave in the order the requests came,
    /// and the books balance after every step.
    @Test(arguments: 0..<200)
    func answersLeaveInTheOrderRequestsCame(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var machine = machine(idleTimeout: .seconds(1))
        let heads = [Self.get, Self.get, Self.head, Self.post, Self.connect]
        var now = Self.t0
        var sent = 0
        var passedOn: [Int] = []  // requests Hummingbird has, in order
        var answered: [Int] = []  // what left, in order
        var answeringHead = false
        var closing = false
        _ = machine.connectionActive(now: now)
        for _ in 0..<60 {
            now = now + .milliseconds(Int64.random(in: 0...400, using: &random))
            if !closing, Bool.random(using: &random) {
                // The client sends a request, head and end in one read.
                let head = heads.randomElement(using: &random)!
                // Only a request with a `Connection` field (never plain) may end the connection.
                let isKeepAlive = head.isPlain || Int.random(in: 0..<12, using: &random) != 0
                let facts = Machine.Head(isPlain: head.isPlain, isKeepAlive: isKeepAlive, answering: head.answering)
                let id = sent
                sent += 1
                if machine.headReceived(facts, isWritable: Int.random(in: 0..<8, using: &random) != 0, now: now) == .askLane {
                    #expect(passedOn.isEmpty, "seed \(seed): the lane was asked with an answer owed")
                    if Bool.random(using: &random) {
                        _ = machine.laneAnswered(now: now)
                        answered.append(id)
                    } else {
                        machine.laneDeclined(facts)
                        passedOn.append(id)
                    }
                } else {
                    passedOn.append(id)
                }
                _ = machine.endReceived(now: now)
                _ = machine.readComplete()
                if !isKeepAlive { closing = true }
            } else if let first = passedOn.first {
                // Hummingbird answers the oldest request it has, sometimes after a 100.
                if !answeringHead {
                    if Int.random(in: 0..<6, using: &random) == 0 { #expect(machine.answerHead(statusCode: 100) == .forward) }
                    _ = machine.answerHead(statusCode: 200)
                    answeringHead = true
                } else {
                    _ = machine.answerEnd(now: now)
                    answeringHead = false
                    answered.append(first)
                    passedOn.removeFirst()
                }
            }
            // The books: what Hummingbird owes, as the machine counts it.
            #expect(machine.passedOn == passedOn.count, "seed \(seed)")
            #expect(machine.owed.count == passedOn.count - (answeringHead ? 1 : 0), "seed \(seed)")
            if closing { #expect(machine.passingEverything) }
        }
        #expect(answered == Array(answered.sorted()), "seed \(seed): answers out of order \(answered)")
        #expect(Set(answered).count == answered.count)
    }
}
