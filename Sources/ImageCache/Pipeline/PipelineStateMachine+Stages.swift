/// The limited stages: who runs, who waits in which order, and what is refused. Queued work
/// belongs to a flight and is ordered by that flight's priority when a slot frees (see
/// ``PipelineStateMachine``).
extension PipelineStateMachine {
    typealias SlotWaiter = Handles.SlotWaiter
    typealias Deadline = Handles.Deadline
    typealias EntryID = UInt64

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

    /// Work waiting for a slot.
    struct Entry: Sendable {
        let id: EntryID
        /// The flight the work is for: its priority orders the queue.
        let flight: FlightID
        /// Arrival order, for first in first out within a priority.
        let sequence: UInt64
        let host: String?
        let waiter: SlotWaiter
        /// Admitted while the queue was full: it fails if it has not started by its deadline.
        let overCapacity: Bool
        /// The priority it had when queued, used once its flight is gone.
        let queuedPriority: Priority
        /// The timer that fails it, for work over the capacity.
        var deadline: Deadline?
    }

    /// The slots and queues of every stage.
    struct Stages {
        struct State {
            var limit: Int
            /// The most slots background work (below ``Priority/normal``) holds at once.
            var backgroundLimit: Int
            var running = 0
            /// The slots held by work that started at background priority, by slot.
            var background: Set<EntryID> = []
            var queue: [Entry] = []
            var stats: SchedulingStats.Stage
        }

        let limits: ImagePipeline.Limits
        var states: [State]
        var downloadsByHost: [String: Int] = [:]
        var maxDownloadsOnOneHost = 0
        var waitingOriginalBytes = 0
        var maxWaitingOriginalBytes = 0

        init(limits: ImagePipeline.Limits) {
            self.limits = limits
            states = Stage.allCases.map { stage in
                let limit = limits.running(stage)
                let background = limits.background(stage)
                var stats = SchedulingStats.Stage(limit: limit)
                stats.backgroundLimit = background
                return State(limit: limit, backgroundLimit: background, stats: stats)
            }
        }

        subscript(stage: Stage) -> State {
            get { states[stage.rawValue] }
            set { states[stage.rawValue] = newValue }
        }

        /// Whether work for `host` may start in `stage` now; `background` work only within the
        /// stage's background limit, so interactive work always finds a slot soon.
        func canStart(_ stage: Stage, host: String?, background: Bool) -> Bool {
            let state = self[stage]
            guard state.running < state.limit else { return false }
            if background, state.background.count >= state.backgroundLimit { return false }
            guard stage == .download else { return true }
            if waitingOriginalBytes >= limits.waitingOriginalBytes { return false }
            return (downloadsByHost[host ?? ""] ?? 0) < limits.downloadsPerHost
        }

        mutating func markStarted(_ stage: Stage, host: String?, slot: EntryID?, background: Bool) {
            self[stage].running += 1
            self[stage].stats.started += 1
            self[stage].stats.maxRunning = max(self[stage].stats.maxRunning, self[stage].running)
            if background, let slot {
                self[stage].background.insert(slot)
                self[stage].stats.maxBackgroundRunning = max(self[stage].stats.maxBackgroundRunning, self[stage].background.count)
            }
            if stage == .download {
                let count = (downloadsByHost[host ?? ""] ?? 0) + 1
                downloadsByHost[host ?? ""] = count
                maxDownloadsOnOneHost = max(maxDownloadsOnOneHost, count)
            }
        }
    }

    // MARK: - Running and queueing

    /// Starts work at once when a slot is free: the path with no queue and no waiter.
    /// - Parameters:
    ///   - slot: the id the caller gives back to ``release(_:host:slot:)``; work without one
    ///     is not counted as background.
    ///   - background: whether the work's priority is below ``Priority/normal``: it starts only
    ///     within the stage's background limit.
    mutating func tryStart(_ stage: Stage, host: String?, slot: EntryID? = nil, background: Bool = false) -> Bool {
        guard stages.canStart(stage, host: host, background: background && slot != nil) else { return false }
        stages.markStarted(stage, host: host, slot: slot, background: background)
        return true
    }

    enum EnqueueAction {
        /// A slot was free after all: the work runs now; the waiter was not kept.
        case start
        /// The waiter waits for ``release(_:host:)``; `overCapacity` work needs a deadline
        /// (``setDeadline(_:stage:id:)``).
        case waiting(overCapacity: Bool)
        /// The queue is full and this is background work: refuse it.
        case refused
    }

    /// Queues work of flight `flight` for `stage`, or starts it when a slot is free.
    /// - Returns: the action for this waiter, and a queued entry refused to make room for it
    ///   (background work of lower priority), which the caller must fail.
    mutating func enqueue(
        _ stage: Stage, id: EntryID, flight: FlightID, host: String?, waiter: SlotWaiter, priority ended: Priority? = nil
    ) -> (action: EnqueueAction, refused: Entry?) {
        let priority = flights[flight]?.priority ?? ended ?? .normal
        if tryStart(stage, host: host, slot: id, background: priority.isBackground) { return (.start, nil) }
        var refused: Entry?
        var overCapacity = false
        if stages[stage].queue.count >= stages.limits.queueCapacity {
            // Full: the lowest-priority background entry (the latest among equals) makes room
            // for anything above it; otherwise background work is refused and other work waits
            // past the capacity, with a deadline.
            let queue = stages[stage].queue
            let victim = queue.indices
                .filter { self.priority(of: queue[$0]) < priority && self.priority(of: queue[$0]).isBackground }
                .min { a, b in
                    let (pa, pb) = (self.priority(of: queue[a]), self.priority(of: queue[b]))
                    return pa != pb ? pa < pb : queue[a].sequence > queue[b].sequence
                }
            if let victim {
                refused = stages[stage].queue.remove(at: victim)
                stages[stage].stats.refused += 1
            } else if priority.isBackground {
                stages[stage].stats.refused += 1
                return (.refused, nil)
            } else {
                overCapacity = true
            }
        }
        stages[stage].queue.append(Entry(
            id: id, flight: flight, sequence: makeID(), host: host, waiter: waiter, overCapacity: overCapacity,
            queuedPriority: priority
        ))
        stages[stage].stats.waited += 1
        stages[stage].stats.maxQueued = max(stages[stage].stats.maxQueued, stages[stage].queue.count)
        return (.waiting(overCapacity: overCapacity), refused)
    }

    /// Keeps `deadline` on queued entry `id`.
    /// - Returns: false when the entry already started or left: the caller cancels the deadline.
    mutating func setDeadline(_ deadline: Deadline, stage: Stage, id: EntryID) -> Bool {
        guard let index = stages[stage].queue.firstIndex(where: { $0.id == id }) else { return false }
        stages[stage].queue[index].deadline = deadline
        return true
    }

    func priority(of entry: Entry) -> Priority {
        flights[entry.flight]?.priority ?? entry.queuedPriority
    }

    /// Work in `stage` finished: frees its slot (`slot`, as it was started) and starts what may
    /// run now. Without its slot (the direct tests), a background slot is freed when no other
    /// work runs.
    /// - Returns: the entries started, each now holding a slot: resume their waiters and cancel
    ///   their deadlines.
    mutating func release(_ stage: Stage, host: String?, slot: EntryID? = nil) -> [Entry] {
        stages[stage].running -= 1
        if let slot { stages[stage].background.remove(slot) }
        if stages[stage].background.count > stages[stage].running, let any = stages[stage].background.first {
            stages[stage].background.remove(any)
        }
        if stage == .download {
            let count = (stages.downloadsByHost[host ?? ""] ?? 1) - 1
            stages.downloadsByHost[host ?? ""] = count > 0 ? count : nil
        }
        return startRunnable(stage)
    }

    /// After a flight's priority rose (a task raised, a caller of higher priority joined): queued
    /// background work that is background no more may start on a slot kept from background work.
    /// - Returns: the entries started: resume their waiters and cancel their deadlines.
    mutating func startPromoted() -> [Entry] {
        startRunnable(.processing)
    }

    /// Starts the best runnable queued work of `stage` while slots are free.
    private mutating func startRunnable(_ stage: Stage) -> [Entry] {
        var started: [Entry] = []
        while let index = bestRunnable(stage) {
            let entry = stages[stage].queue.remove(at: index)
            stages.markStarted(stage, host: entry.host, slot: entry.id, background: priority(of: entry).isBackground)
            started.append(entry)
        }
        return started
    }

    /// The queued entry to start next: the highest priority, the earliest within it, among
    /// those whose slot is free.
    func bestRunnable(_ stage: Stage) -> Int? {
        let queue = stages[stage].queue
        var best: Int?
        for index in queue.indices where stages.canStart(stage, host: queue[index].host, background: priority(of: queue[index]).isBackground) {
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
    /// - Returns: the entry, or `nil` when it already started or left.
    mutating func leave(_ stage: Stage, id: EntryID) -> Entry? {
        guard let index = stages[stage].queue.firstIndex(where: { $0.id == id }) else { return nil }
        return stages[stage].queue.remove(at: index)
    }

    /// Removes a queued entry whose deadline passed.
    /// - Returns: its waiter, or `nil` when it already started or left.
    mutating func expire(_ stage: Stage, id: EntryID) -> SlotWaiter? {
        guard let entry = leave(stage, id: id) else { return nil }
        stages[stage].stats.timedOut += 1
        return entry.waiter
    }

    // MARK: - Originals waiting for processing

    /// An original of `bytes` arrived and waits for its variant to be processed.
    mutating func holdOriginal(bytes: Int) {
        stages.waitingOriginalBytes += bytes
        stages.maxWaitingOriginalBytes = max(stages.maxWaitingOriginalBytes, stages.waitingOriginalBytes)
    }

    /// The variant of an original of `bytes` was processed (or failed): downloads may resume.
    /// - Returns: the download entries started.
    mutating func releaseOriginal(bytes: Int) -> [Entry] {
        stages.waitingOriginalBytes -= bytes
        return startRunnable(.download)
    }

    // MARK: - Reading

    /// The counts of every stage.
    var stats: SchedulingStats {
        func stage(_ stage: Stage) -> SchedulingStats.Stage {
            var stats = stages[stage].stats
            stats.running = stages[stage].running
            stats.backgroundRunning = stages[stage].background.count
            stats.queued = stages[stage].queue.count
            return stats
        }
        return SchedulingStats(
            downloads: stage(.download), processing: stage(.processing), diskReads: stage(.diskRead),
            diskWrites: stage(.diskWrite), maxDownloadsOnOneHost: stages.maxDownloadsOnOneHost,
            waitingOriginalBytes: stages.waitingOriginalBytes, maxWaitingOriginalBytes: stages.maxWaitingOriginalBytes
        )
    }

    /// The flights of the entries queued in `stage`, in the order they would start if every
    /// slot freed now (tests).
    func startOrder(_ stage: Stage) -> [FlightID] {
        stages[stage].queue
            .sorted { a, b in
                let (pa, pb) = (priority(of: a), priority(of: b))
                return pa != pb ? pa > pb : a.sequence < b.sequence
            }
            .map(\.flight)
    }
}
