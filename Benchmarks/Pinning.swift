import Foundation

/// Servers on one CPU, the load generator on the other, and the server's CPU time per request:
/// on a shared two-core machine, requests per second move with the neighbours' load by a factor
/// of two within minutes, while the CPU time a server spends per request moves by a few percent.
enum Pinning {
    /// util-linux's `taskset`, part of every Debian system.
    static let taskset = Bench.which("taskset") ?? "/usr/bin/taskset"

    /// `pid` and its descendants (nginx's master, workers and cache processes), from `/proc`.
    static func processTree(_ pid: Int32) -> [Int32] {
        var parents: [Int32: [Int32]] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let child = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            // After the command name in parentheses: state, then the parent's id.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = Int32(fields[1]) { parents[parent, default: []].append(child) }
        }
        var tree = [pid]
        var index = 0
        while index < tree.count {
            tree += parents[tree[index]] ?? []
            index += 1
        }
        return tree
    }

    /// Pins every thread of the processes to CPU `core`.
    static func pin(_ pids: [Int32], to core: Int) throws {
        for pid in pids { try Bench.run(taskset, ["-a", "-p", "-c", "\(core)", "\(pid)"]) }
    }

    /// User and system CPU seconds the processes have used so far.
    static func cpuSeconds(_ pids: [Int32]) -> Double {
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        return pids.reduce(0) { total, pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return total }
            // Fields 14 and 15 of stat(5), counted after the name: utime, stime.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return total }
            return total + (user + system) / ticksPerSecond
        }
    }

    /// One pinned measurement of a server.
    struct Measurement {
        var requestsPerSecond: Double
        /// The server's CPU time per request, in microseconds.
        var microsecondsPerRequest: Double
    }

    /// wrk on CPU 1 (one thread, 32 connections) against a server whose processes run on CPU 0.
    static func measure(_ base: String, paths: [String], server pids: [Int32], seconds: Int) throws -> Measurement {
        try pin(pids, to: 0)
        let before = cpuSeconds(pids)
        let run = try Bench.wrkRun(base, paths: paths, seconds: seconds, connections: 32, threads: 1, core: 1)
        let used = cpuSeconds(pids) - before
        return Measurement(requestsPerSecond: run.requestsPerSecond, microsecondsPerRequest: used * 1e6 / Double(max(run.requests, 1)))
    }

    /// Lets the processes run on every CPU again.
    static func unpin(_ pids: [Int32]) {
        for pid in pids { _ = try? Bench.run(taskset, ["-a", "-p", "-c", "0-\(max(ProcessInfo.processInfo.activeProcessorCount - 1, 0))", "\(pid)"]) }
    }
}
