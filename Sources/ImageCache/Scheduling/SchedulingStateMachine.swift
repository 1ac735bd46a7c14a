/// The bookkeeping of the pipeline's limited stages: who runs, who waits in which order, and at
/// what priority. A pure value type, like `FlightStateMachine`: each operation changes the state
/// and returns what the caller must do (resume these waiters, refuse that one); the caller does
/// it outside the lock that guards this value. Nothing here suspends or reads a clock.
///
/// Priorities form a small graph. A *caller* node has its own priority (a request's, or an
/// ``ImageTask``'s, which can change). A *flight* node (the work of one cache key) has the
/// highest priority among the nodes attached to it: its waiters, and, for an original, the
/// flights of the variants being made from it. Queued work is ordered by its node's current
/// priority when a slot frees, so raising a waiter's priority moves the work it waits for.
///
/// ```
/// caller(high) ──┐
/// caller(low) ───┴──► flight "…#thumbnail-200" ──► flight "…/7.png" (the original)
/// ```
///
/// Generic over the waiter (a continuation in the scheduler, a plain value in tests).
struct SchedulingStateMachine<Waiter> {
    /// The limited stages.
    enum Stage: Int, CaseIterable, CustomStringConvertible {
        case diskRead, download, processing, diskWrite

        var description: String {
            switch self {
            case .diskRead: "disk read"
            case .download: "download"
            case .processing: "processing"
            case .diskWrite: "disk write"
            }
        }
    }

    typealias Priority = ImageRequest.Priority
    typealias EntryID = UInt64

    /// A node of the priority graph.
    enum Node: Hashable {
        /// A caller: a request, a task handle, a prefetch.
        case caller(UInt64)
        /// The work of one flight (the pipeline's flight ID).
        case flight(UInt64)
    }

    struct NodeState {
        /// A caller's own priority; `nil` for a flight.
        var own: Priority?
        /// Nodes attached to this one, with how many times each is attached.
        var inputs: [Node: Int] = [:]
        /// Nodes this one is attached to.
        var outputs: [Node: Int] = [:]
        /// The priority that counts: the own, or the highest input's.
        var effective: Priority
        /// Attached callers that want the result kept in memory (a flight's).
        var memoryWanted = 0
    }

    struct Entry {
        let id: EntryID
        let node: Node
        /// Arrival order, for first in first out within a priority.
        let sequence: UInt64
        let host: String?
        let waiter: Waiter
        /// Admitted while the queue was full: it fails if it has not started by its deadline.
        let overCapacity: Bool
        /// The priority it had when queued, used if its node is gone.
        let queuedPriority: Priority
    }

    struct StageState {
        var limit: Int
        var running = 0
        var queue: [Entry] = []
        var stats: SchedulingStats.Stage
    }

    struct Limits {
        var running: [Stage: Int]
        var downloadsPerHost: Int
        var waitingOriginalBytes: Int
        var queueCapacity: Int
    }

    private(set) var stages: [StageState]
    private(set) var nodes: [Node: NodeState] = [:]
    private(set) var downloadsByHost: [String: Int] = [:]
    private(set) var maxDownloadsOnOneHost = 0
    private(set) var waitingOriginalBytes = 0
    private(set) var maxWaitingOriginalBytes = 0
    let limits: Limits
    private var lastID: UInt64 = 0

    init(limits: Limits) {
        self.limits = limits
        stages = Stage.allCases.map { stage in
            let limit = max(1, limits.running[stage] ?? 1)
            return StageState(limit: limit, stats: .init(limit: limit))
        }
    }

    /// A fresh identifier for a caller node or a queue entry.
    mutating func makeID() -> UInt64 {
        lastID += 1
        return lastID
    }

    // MARK: - Priorities

    /// A new caller node with its own priority.
    mutating func makeCaller(_ priority: Priority) -> Node {
        let node = Node.caller(makeID())
        nodes[node] = NodeState(own: priority, effective: priority)
        return node
    }

    /// Changes a caller's priority; the flights it waits for follow.
    mutating func setPriority(_ priority: Priority, of caller: Node) {
        guard nodes[caller]?.own != nil else { return }
        nodes[caller]!.own = priority
        refresh(caller)
    }

    /// Forgets a caller node; detach it from its flights first.
    mutating func removeCaller(_ caller: Node) {
        guard let state = nodes[caller] else { return }
        for (output, count) in state.outputs {
            for _ in 0..<count { detach(caller, from: output) }
        }
        nodes[caller] = nil
    }

    /// The priority that counts for `node`; `nil` when it is not known.
    func priority(of node: Node) -> Priority? {
        nodes[node]?.effective
    }

    /// Attaches `input` (a caller, or a variant's flight) to `flight`, creating the flight's
    /// node on first use.
    mutating func attach(_ input: Node, to flight: Node, wantsMemory: Bool) {
        guard let inputState = nodes[input] else { return }
        var state = nodes[flight] ?? NodeState(effective: inputState.effective)
        state.inputs[input, default: 0] += 1
        if wantsMemory { state.memoryWanted += 1 }
        nodes[flight] = state
        nodes[input]!.outputs[flight, default: 0] += 1
        refresh(flight)
    }

    /// Detaches `input` from `flight`; the flight's node goes when nothing is attached.
    mutating func detach(_ input: Node, from flight: Node, wantedMemory: Bool = false) {
        guard nodes[flight]?.inputs[input] != nil else { return }
        if wantedMemory { nodes[flight]!.memoryWanted = max(0, nodes[flight]!.memoryWanted - 1) }
        if var inputState = nodes[input], let outputs = inputState.outputs[flight] {
            inputState.outputs[flight] = outputs > 1 ? outputs - 1 : nil
            nodes[input] = inputState
        }
        dropInput(input, of: flight)
    }

    /// Whether any caller attached to `flight` wants its result kept in memory.
    func wantsMemory(_ flight: Node) -> Bool {
        (nodes[flight]?.memoryWanted ?? 0) > 0
    }

    /// Removes one attachment of `input` from `output`'s inputs; a flight left with none goes,
    /// and with it its own attachments (an original loses the variant that was waiting for it).
    private mutating func dropInput(_ input: Node, of output: Node) {
        guard var state = nodes[output], let count = state.inputs[input] else { return }
        state.inputs[input] = count > 1 ? count - 1 : nil
        if state.inputs.isEmpty, state.own == nil {
            nodes[output] = nil
            for (next, count) in state.outputs {
                for _ in 0..<count { dropInput(output, of: next) }
            }
            return
        }
        nodes[output] = state
        refresh(output)
    }

    /// Recomputes `node`'s effective priority and, when it changed, its outputs'.
    private mutating func refresh(_ node: Node) {
        guard var state = nodes[node] else { return }
        let inputs = state.inputs.keys.compactMap { nodes[$0]?.effective }
        let effective = ([state.own].compactMap { $0} + inputs).max() ?? .veryLow
        guard effective != state.effective else { return }
        state.effective = effective
        nodes[node] = state
        for output in state.outputs.keys { refresh(output) }
    }

    // MARK: - Running and queueing

    /// Whether work for `host` may start in `stage` now.
    private func canStart(_ stage: Stage, host: String?) -> Bool {
        let state = stages[stage.rawValue]
        guard state.running < state.limit else { return false }
        guard stage == .download else { return true }
        if waitingOriginalBytes >= limits.waitingOriginalBytes { return false }
        return (downloadsByHost[host ?? ""] ?? 0) < limits.downloadsPerHost
    }

    private mutating func markStarted(_ stage: Stage, host: String?) {
        var state = stages[stage.rawValue]
        state.running += 1
        state.stats.started += 1
        state.stats.maxRunning = max(state.stats.maxRunning, state.running)
        stages[stage.rawValue] = state
        if stage == .download {
            let count = (downloadsByHost[host ?? ""] ?? 0) + 1
            downloadsByHost[host ?? ""] = count
            maxDownloadsOnOneHost = max(maxDownloadsOnOneHost, count)
        }
    }

    /// Starts work at once when a slot is free: the path with no queue and no waiter.
    mutating func tryStart(_ stage: Stage, host: String?) -> Bool {
        guard canStart(stage, host: host) else { return false }
        markStarted(stage, host: host)
        return true
    }

    enum EnqueueAction {
        /// A slot was free after all: the work runs now; the waiter was not kept.
        case start
        /// The waiter waits for ``release(_:host:)``; `overCapacity` work has a deadline.
        case waiting(overCapacity: Bool)
        /// The queue is full and this is background work: refuse it.
        case refused
    }

    /// Queues work of `node` for `stage`, or starts it when a slot is free.
    /// - Returns: the action for this waiter, and a queued waiter refused to make room for it
    ///   (background work of lower priority), which the caller must fail.
    mutating func enqueue(
        _ stage: Stage, id: EntryID, node: Node, host: String?, waiter: Waiter
    ) -> (action: EnqueueAction, refused: Waiter?) {
        if tryStart(stage, host: host) { return (.start, nil) }
        let priority = nodes[node]?.effective ?? .normal
        var state = stages[stage.rawValue]
        var refused: Waiter?
        var overCapacity = false
        if state.queue.count >= limits.queueCapacity {
            // Full: the lowest-priority background entry (the latest among equals) makes room
            // for anything above it; otherwise background work is refused and other work waits
            // past the capacity, with a deadline.
            let victim = state.queue.indices
                .filter { self.priority(of: state.queue[$0]) < priority && self.priority(of: state.queue[$0]).isBackground }
                .min { a, b in
                    let (pa, pb) = (self.priority(of: state.queue[a]), self.priority(of: state.queue[b]))
                    return pa != pb ? pa < pb : state.queue[a].sequence > state.queue[b].sequence
                }
            if let victim {
                refused = state.queue.remove(at: victim).waiter
                state.stats.refused += 1
            } else if priority.isBackground {
                state.stats.refused += 1
                stages[stage.rawValue] = state
                return (.refused, nil)
            } else {
                overCapacity = true
            }
        }
        state.queue.append(Entry(
            id: id, node: node, sequence: makeID(), host: host, waiter: waiter, overCapacity: overCapacity,
            queuedPriority: priority
        ))
        state.stats.waited += 1
        state.stats.maxQueued = max(state.stats.maxQueued, state.queue.count)
        stages[stage.rawValue] = state
        return (.waiting(overCapacity: overCapacity), refused)
    }

    private func priority(of entry: Entry) -> Priority {
        nodes[entry.node]?.effective ?? entry.queuedPriority
    }

    /// Work in `stage` finished: frees its slot and starts what may run now.
    /// - Returns: the waiters to resume, each now holding a slot.
    mutating func release(_ stage: Stage, host: String?) -> [Waiter] {
        stages[stage.rawValue].running -= 1
        if stage == .download {
            let count = (downloadsByHost[host ?? ""] ?? 1) - 1
            downloadsByHost[host ?? ""] = count > 0 ? count : nil
        }
        return startRunnable(stage)
    }

    /// Starts the best runnable queued work of `stage` while slots are free.
    private mutating func startRunnable(_ stage: Stage) -> [Waiter] {
        var started: [Waiter] = []
        while let index = bestRunnable(stage) {
            let entry = stages[stage.rawValue].queue.remove(at: index)
            markStarted(stage, host: entry.host)
            started.append(entry.waiter)
        }
        return started
    }

    /// The queued entry to start next: the highest priority, the earliest within it, among
    /// those whose slot is free.
    private func bestRunnable(_ stage: Stage) -> Int? {
        let queue = stages[stage.rawValue].queue
        var best: Int?
        for index in queue.indices where canStart(stage, host: queue[index].host) {
            guard let current = best else {
                best = index
                continue
            }
            let (p, q) = (priority(of: queue[index]), priority(of: queue[current]))
            if p > q || (p == q && queue[index].sequence < queue[current].sequence) { best = index }
        }
        return best
    }

    /// Removes a queued entry whose waiter was cancelled.
    /// - Returns: its waiter, or `nil` when it already started or left.
    mutating func cancel(_ stage: Stage, id: EntryID) -> Waiter? {
        guard let index = stages[stage.rawValue].queue.firstIndex(where: { $0.id == id }) else { return nil }
        return stages[stage.rawValue].queue.remove(at: index).waiter
    }

    /// Removes a queued entry whose deadline passed.
    /// - Returns: its waiter, or `nil` when it already started or left.
    mutating func expire(_ stage: Stage, id: EntryID) -> Waiter? {
        guard let waiter = cancel(stage, id: id) else { return nil }
        stages[stage.rawValue].stats.timedOut += 1
        return waiter
    }

    /// Whether entry `id` still waits in `stage`.
    func isQueued(_ stage: Stage, id: EntryID) -> Bool {
        stages[stage.rawValue].queue.contains { $0.id == id }
    }

    // MARK: - Originals waiting for processing

    /// An original of `bytes` arrived and waits for its variant to be processed.
    mutating func holdOriginal(bytes: Int) {
        waitingOriginalBytes += bytes
        maxWaitingOriginalBytes = max(maxWaitingOriginalBytes, waitingOriginalBytes)
    }

    /// The variant of an original of `bytes` was processed (or failed): downloads may resume.
    /// - Returns: the download waiters to resume.
    mutating func releaseOriginal(bytes: Int) -> [Waiter] {
        waitingOriginalBytes -= bytes
        return startRunnable(.download)
    }

    // MARK: - Reading

    /// The counts of every stage.
    var stats: SchedulingStats {
        func stage(_ stage: Stage) -> SchedulingStats.Stage {
            var stats = stages[stage.rawValue].stats
            stats.running = stages[stage.rawValue].running
            stats.queued = stages[stage.rawValue].queue.count
            return stats
        }
        return SchedulingStats(
            downloads: stage(.download), processing: stage(.processing), diskReads: stage(.diskRead),
            diskWrites: stage(.diskWrite), maxDownloadsOnOneHost: maxDownloadsOnOneHost,
            waitingOriginalBytes: waitingOriginalBytes, maxWaitingOriginalBytes: maxWaitingOriginalBytes
        )
    }

    /// The nodes of the entries queued in `stage`, in the order they would start if every
    /// slot freed now (tests).
    func startOrder(_ stage: Stage) -> [Node] {
        stages[stage.rawValue].queue
            .sorted { a, b in
                let (pa, pb) = (priority(of: a), priority(of: b))
                return pa != pb ? pa > pb : a.sequence < b.sequence
            }
            .map(\.node)
    }

    /// Checks the invariants; tests call it after every operation.
    /// - Returns: the first violation found, or `nil`.
    func invariantViolation() -> String? {
        for stage in Stage.allCases {
            let state = stages[stage.rawValue]
            if state.running < 0 { return "\(stage): \(state.running) running" }
            if state.running > state.limit { return "\(stage): \(state.running) running over the limit \(state.limit)" }
            if bestRunnable(stage) != nil { return "\(stage): queued work could start but waits" }
            if Set(state.queue.map(\.id)).count != state.queue.count { return "\(stage): an entry is queued twice" }
        }
        if downloadsByHost.values.reduce(0, +) != stages[Stage.download.rawValue].running {
            return "downloads per host do not add up to the running downloads"
        }
        if downloadsByHost.values.contains(where: { $0 > limits.downloadsPerHost }) { return "a host is over its limit" }
        if waitingOriginalBytes < 0 { return "\(waitingOriginalBytes) original bytes waiting" }
        for (node, state) in nodes {
            for (input, count) in state.inputs where nodes[input]?.outputs[node] != count {
                if nodes[input] != nil { return "\(node): input \(input) does not list it as an output" }
            }
            let expected = ([state.own].compactMap { $0 } + state.inputs.keys.compactMap { nodes[$0]?.effective }).max()
            if let expected, expected != state.effective {
                return "\(node): effective priority \(state.effective), expected \(expected)"
            }
            if case .flight = node, state.inputs.isEmpty { return "\(node): a flight node nothing is attached to" }
        }
        return nil
    }
}
