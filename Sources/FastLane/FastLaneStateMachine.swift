import NIOCore

/// What the lane knows about one connection, and every decision it makes from it, without I/O:
/// ``FastLaneHandler`` feeds it the connection's events and carries out the actions it returns
/// (NIO's state-machine style). It owns the order of answers (a request passed on makes every
/// later one wait for it), what a passed-on answer may carry (none for `HEAD` and `CONNECT`),
/// when the end of a read goes on to Hummingbird, and the idle time-out on the loop's clock.
struct FastLaneStateMachine {
    /// What an answer to a passed-on request may carry.
    enum Answering: Equatable {
        /// Anything: the answer is Hummingbird's, encoded by NIO.
        case any
        /// A head without a body: the request was a `HEAD`.
        case headOnly
        /// A head without a body or framing fields: the request was a `CONNECT`.
        case connect
    }

    /// What the parts being read belong to.
    enum Reading: Equatable {
        /// Between requests.
        case idle
        /// A request passed on to Hummingbird: its parts follow it.
        case passing
        /// A request the lane answered: its remaining parts (the end) are dropped.
        case answered
    }

    /// What a request head comes with, as the handler sees it.
    struct Head: Equatable {
        /// An HTTP/1.1 `GET` or `HEAD` the lane may answer (``FastLaneHandler/isPlain(_:)``).
        var isPlain: Bool
        /// Whether the connection stays open after the answer.
        var isKeepAlive: Bool
        /// What its answer may carry, by its method.
        var answering: Answering
    }

    /// What to do with a request head.
    enum HeadAction: Equatable {
        /// Ask the lane's responder; then ``laneAnswered(now:)`` or ``laneDeclined(_:now:)``.
        case askLane
        /// Pass it on to Hummingbird.
        case pass
    }

    /// What to do with a request's body or end part.
    enum PartAction: Equatable {
        case pass
        case drop
    }

    /// What to do at the end of a read.
    struct ReadCompleteAction: Equatable {
        /// Flush the lane's answers written during the read.
        var flush: Bool
        /// Tell Hummingbird's handlers the read is over: something of it was passed on.
        var fireReadComplete: Bool
    }

    /// What to do with the head of an answer Hummingbird writes.
    enum AnswerHeadAction: Equatable {
        /// Let NIO encode it.
        case forward
        /// Write it framed as NIO's paired encoder would, without a body (`connect`: no framing fields).
        case writeBodiless(connect: Bool)
    }

    /// What to do with the body part of an answer Hummingbird writes.
    enum AnswerBodyAction: Equatable {
        case forward
        /// Fail its promise: the request was a `HEAD` or `CONNECT`.
        case fail
    }

    /// What to do with the end part of an answer Hummingbird writes.
    enum AnswerEndAction: Equatable {
        case forward
        /// Complete its promise, in order, with nothing written (the answer was bodiless).
        case completeEmpty
    }

    /// What to do when the idle check fires.
    enum IdleAction: Equatable {
        /// Nothing: the connection has no idle time-out.
        case none
        case close
        /// Check again then: there was activity since the check was scheduled.
        case check(at: NIODeadline)
    }

    /// The idle time-out; `nil` never.
    let idleTimeout: TimeAmount?
    /// Whether the pipeline has NIO's encoder before the lane: without it the lane answers nothing.
    private(set) var hasWire = false
    private(set) var reading = Reading.idle
    /// What each passed-on request's answer may carry, oldest first (only with a wire).
    private(set) var owed = CircularBuffer<Answering>()
    /// What the answer being written may carry.
    private(set) var answering = Answering.any
    /// Requests passed on whose answers Hummingbird has not finished writing.
    private(set) var passedOn = 0
    /// Set once a passed-on request may end the connection: from then on everything is passed on.
    private(set) var passingEverything = false
    private(set) var needsFlush = false
    /// Whether a part was passed on since the last read-complete that was.
    private(set) var passedSinceReadComplete = false
    private(set) var lastActivity = NIODeadline.uptimeNanoseconds(0)
    /// The bytes still to send, and the bytes taken, when an idle check last found the time-out
    /// passed with answers going out; `nil` after any other activity.
    private(set) var waitingAtLastCheck: Int?
    private(set) var takenAtLastCheck: Int?
    private(set) var isRequestBeingRead = false
    /// Whether an idle check is scheduled.
    private(set) var isIdleCheckScheduled = false

    init(idleTimeout: TimeAmount?) {
        self.idleTimeout = idleTimeout
    }

    /// The encoder was found before the lane.
    mutating func wireFound() {
        hasWire = true
    }

    /// The connection is active: the idle wait starts. Returns when to check, if a check is due.
    mutating func connectionActive(now: NIODeadline) -> NIODeadline? {
        guard idleTimeout != nil else { return nil }
        lastActivity = now
        return scheduleIdleCheck()
    }

    /// The handler is gone: any scheduled check was cancelled.
    mutating func removed() {
        isIdleCheckScheduled = false
        hasWire = false
    }

    mutating func headReceived(_ head: Head, isWritable: Bool, now: NIODeadline) -> HeadAction {
        noteActivity(now)
        isRequestBeingRead = true
        if hasWire, passedOn == 0, !passingEverything, isWritable, head.isPlain { return .askLane }
        pass(head)
        return .pass
    }

    /// The lane answered the head it was asked about. Returns when to check for idleness, if due.
    mutating func laneAnswered(now: NIODeadline) -> NIODeadline? {
        reading = .answered
        needsFlush = true
        return passedOn == 0 ? everythingAnswered(now: now) : nil
    }

    /// The lane had no answer for the head it was asked about: it is passed on.
    mutating func laneDeclined(_ head: Head) {
        pass(head)
    }

    private mutating func pass(_ head: Head) {
        // `Connection: close`, or HTTP/1.0 without keep-alive: Hummingbird may end the connection.
        if !head.isKeepAlive { passingEverything = true }
        passedOn += 1
        if hasWire { owed.append(head.answering) }
        reading = .passing
        passedSinceReadComplete = true
    }

    mutating func bodyReceived(now: NIODeadline) -> PartAction {
        noteActivity(now)
        guard reading != .answered else { return .drop }
        passedSinceReadComplete = true
        return .pass
    }

    mutating func endReceived(now: NIODeadline) -> PartAction {
        noteActivity(now)
        isRequestBeingRead = false
        defer { reading = .idle }
        guard reading != .answered else { return .drop }
        passedSinceReadComplete = true
        return .pass
    }

    mutating func readComplete() -> ReadCompleteAction {
        defer { (needsFlush, passedSinceReadComplete) = (false, false) }
        return ReadCompleteAction(flush: needsFlush, fireReadComplete: passedSinceReadComplete)
    }

    /// Hummingbird writes an answer's head with `statusCode`.
    mutating func answerHead(statusCode: Int) -> AnswerHeadAction {
        // A 1xx other than 101 comes before the answer proper, which it does not stand for.
        if (100..<200).contains(statusCode), statusCode != 101 { return .forward }
        answering = owed.popFirst() ?? .any
        guard hasWire, answering != .any else { return .forward }
        return .writeBodiless(connect: answering == .connect)
    }

    func answerBody() -> AnswerBodyAction {
        answering == .any ? .forward : .fail
    }

    /// Hummingbird ends an answer: the oldest request passed on is answered. Returns what to do
    /// with the end, and when to check for idleness, if due.
    mutating func answerEnd(now: NIODeadline) -> (AnswerEndAction, idleCheck: NIODeadline?) {
        let bodiless = answering != .any
        answering = .any
        var check: NIODeadline?
        if passedOn > 0 {
            passedOn -= 1
            if passedOn == 0 { check = everythingAnswered(now: now) }
        }
        return (bodiless && hasWire ? .completeEmpty : .forward, check)
    }

    /// The scheduled idle check fires at `now`. Hummingbird's rule (its connection state
    /// handler's): once the time-out has passed since the last read or the last answer owed, the
    /// connection is closed; while Hummingbird is still making an answer to a request read whole,
    /// it is left open (the answer starts the wait again). Unlike Hummingbird's, what the client
    /// takes counts: `waitingBytes` is what the channel still holds to send (NIO's
    /// `bufferedWritableBytes`), and fewer of them than at the last such check (or the first check
    /// to see any) is activity, as are more `takenBytes` (the answers' bytes sent on, less those
    /// waiting: the client took some although more were written since) and the channel becoming
    /// writable again (``outputDrained(now:)``). So a client on a slow network taking a large answer for longer
    /// than the time-out is not cut off, and one that takes nothing is closed one time-out later,
    /// owed answers or not: a client that pipelines requests and reads none of their answers
    /// does not hold its connection (and the answers' bytes) for ever.
    mutating func idleCheckFired(now: NIODeadline, waitingBytes: Int = 0, takenBytes: Int = 0) -> IdleAction {
        isIdleCheckScheduled = false
        guard let idleTimeout else { return .none }
        if now >= lastActivity + idleTimeout {
            if waitingBytes == 0, !isRequestBeingRead, passedOn > 0 {
                // An answer is being made, none is going out: left open, and checked again.
                noteActivity(now)
            } else {
                guard waitingBytes > 0,
                      waitingBytes < (waitingAtLastCheck ?? .max) || takenBytes > (takenAtLastCheck ?? .min)
                else { return .close }
                (waitingAtLastCheck, takenAtLastCheck) = (waitingBytes, takenBytes)
                lastActivity = now
            }
        }
        isIdleCheckScheduled = true
        return .check(at: lastActivity + idleTimeout)
    }

    /// The channel is writable again: the client took answers' bytes.
    mutating func outputDrained(now: NIODeadline) {
        noteActivity(now)
    }

    /// No answer is owed any more: the idle wait starts now.
    private mutating func everythingAnswered(now: NIODeadline) -> NIODeadline? {
        guard idleTimeout != nil else { return nil }
        noteActivity(now)
        return scheduleIdleCheck()
    }

    private mutating func noteActivity(_ now: NIODeadline) {
        guard idleTimeout != nil else { return }
        lastActivity = now
        (waitingAtLastCheck, takenAtLastCheck) = (nil, nil)
    }

    private mutating func scheduleIdleCheck() -> NIODeadline? {
        guard let idleTimeout, !isIdleCheckScheduled else { return nil }
        isIdleCheckScheduled = true
        return lastActivity + idleTimeout
    }
}
