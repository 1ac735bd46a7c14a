/// The rules every state of the bookkeeping keeps; the tests check them after every operation.
extension PipelineStateMachine {
    /// Checks the invariants.
    /// - Returns: the first violation found, or `nil`.
    func invariantViolation() -> String? {
        if flightByKey.count != flights.count { return "\(flightByKey.count) keys for \(flights.count) flights" }
        for (id, flight) in flights {
            if flightByKey[flight.key] != id { return "\(flight.key): flight \(id) is not the key's running flight" }
            if id > lastID { return "\(flight.key): flight id \(id) was never issued" }
            if flight.members.isEmpty { return "\(flight.key): a flight nobody wants was not cancelled" }
            // Until its leader hands off, a flight has one leading member and no work; after, work
            // (which ends it) and no leader.
            let leaders = flight.members.values.filter { if case .leading = $0.state { true } else { false } }.count
            if leaders != (flight.work == nil ? 1 : 0) {
                return flight.work == nil
                    ? "\(flight.key): a handed-off flight has no work, so nothing will ever end it"
                    : "\(flight.key): \(leaders) leading members of a flight with work"
            }
            if flight.priority != expectedPriority(id) {
                return "\(flight.key): priority \(flight.priority), expected \(expectedPriority(id))"
            }
            var fromVariants: [FlightID: Int] = [:]
            var fromTasks: [TaskID: Int] = [:]
            for member in flight.members.values {
                switch member.asker {
                case let .flight(variant): fromVariants[variant, default: 0] += 1
                case let .task(task): fromTasks[task, default: 0] += 1
                case .fixed: break
                }
            }
            for (variant, count) in fromVariants where flights[variant] != nil && flights[variant]!.outputs[id] != count {
                return "\(flight.key): flight \(variant) is a member \(count) times but lists it otherwise"
            }
            for (task, count) in fromTasks where tasks[task] != nil && tasks[task]!.flights[id] != count {
                return "\(flight.key): task \(task) is a member \(count) times but lists it otherwise"
            }
            for (output, count) in flight.outputs {
                let times = flights[output]?.members.values.filter { $0.asker == .flight(id) }.count
                if let times, times != count { return "\(flight.key): lists flight \(output) \(count) times, a member \(times)" }
            }
        }
        for (task, node) in tasks {
            for (flight, count) in node.flights {
                let times = flights[flight]?.members.values.filter { $0.asker == .task(task) }.count
                if let times, times != count { return "task \(task): lists flight \(flight) \(count) times, a member \(times)" }
            }
        }
        for stage in Stage.allCases {
            let state = stages[stage]
            if state.running < 0 { return "\(stage): \(state.running) running" }
            if state.running > state.limit { return "\(stage): \(state.running) running over the limit \(state.limit)" }
            if state.background.count > state.backgroundLimit || state.background.count > state.running {
                return "\(stage): \(state.background.count) background slots, limit \(state.backgroundLimit), \(state.running) running"
            }
            if bestRunnable(stage) != nil { return "\(stage): queued work could start but waits" }
            if Set(state.queue.map(\.id)).count != state.queue.count { return "\(stage): an entry is queued twice" }
            if state.queue.contains(where: { $0.deadline != nil && !$0.overCapacity }) {
                return "\(stage): an entry within the capacity has a deadline"
            }
        }
        if stages.downloadsByHost.values.reduce(0, +) != stages[.download].running {
            return "downloads per host do not add up to the running downloads"
        }
        if stages.downloadsByHost.values.contains(where: { $0 > stages.limits.downloadsPerHost }) { return "a host is over its limit" }
        if stages.waitingOriginalBytes < 0 { return "\(stages.waitingOriginalBytes) original bytes waiting" }
        return nil
    }
}
