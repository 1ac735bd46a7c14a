import AsyncHTTPClient
import Foundation
import GalleryServer
import NIOCore
import NIOHTTP1

/// Memory hits while a burst of cold work runs: the scheduling of the second edition (processing
/// on worker threads, stage limits, priorities) against the first edition's (`--unscheduled`:
/// every piece of work at once on Swift's cooperative threads), each in its own app process.
enum BurstBench {
    static let pieces = 500

    static func run(seconds: Int) async throws {
        print("## Burst: memory hits while \(pieces) pieces' thumbnails and details images are made cold (gallery --pieces \(pieces))\n")
        print("wrk on one memory-hit route (/thumbs/1), idle, then during the burst (the burst starts with wrk and")
        print("runs \(pieces) /thumbs/N and \(pieces) /large/N requests, 64 at a time; the originals are on disk and in memory")
        print("from start-up verification, so the burst is processing). Each configuration is a new app process with a")
        print("new cache directory; peak RSS is its VmHWM after the burst.\n")
        let gallery = try Server(
            Bench.emojiart, ["gallery", "--port", "0", "--pieces", "\(pieces)"], announcing: #"serving (http://[^/\s]+)"#
        )
        defer { gallery.stop() }
        var rows: [[String]] = []
        var results: [String: Result] = [:]
        for (label, flags) in [("scheduled (new)", [String]()), ("unscheduled (first edition)", ["--unscheduled"])] {
            let result = try await measure(gallery: gallery.url, flags: flags, seconds: seconds)
            results[label] = result
            rows.append([
                label, Bench.format(result.idle.p50, 2), Bench.format(result.idle.p99, 2), Bench.format(result.burst.p50, 2),
                Bench.format(result.burst.p99, 2), Bench.format(result.burst.p99 / result.idle.p99) + "x",
                Bench.format(result.burstTime.milliseconds, 0), "\(result.failures)", "\(result.peakRSS / 1024) MB",
            ])
        }
        Bench.table(
            ["scheduling", "idle p50 ms", "idle p99 ms", "burst p50 ms", "burst p99 ms", "p99 burst/idle", "burst wall ms", "failed", "peak RSS"],
            rows
        )
        if let new = results["scheduled (new)"], let old = results["unscheduled (first edition)"] {
            print("Targets: p99 during the burst <= 3x idle (new: \(Bench.format(new.burst.p99 / new.idle.p99))x); burst wall time <= 1.1x the first edition's (\(Bench.format(new.burstTime.milliseconds / old.burstTime.milliseconds))x).\n")
        }
    }

    struct Latency { var p50: Double; var p99: Double }

    struct Result {
        var idle: Latency
        var burst: Latency
        var burstTime: Duration
        var failures: Int
        /// KiB.
        var peakRSS: Int
    }

    static func measure(gallery: String, flags: [String], seconds: Int) async throws -> Result {
        let cache = Bench.work + "/burst-cache"
        try? FileManager.default.removeItem(atPath: cache)
        let app = try Server(
            Bench.emojiart, ["app", "--port", "0", "--gallery", gallery, "--cache-dir", cache] + flags,
            announcing: #"open (http://[^/\s]+)"#
        )
        defer { app.stop() }
        try await Bench.waitUntilReady(app, within: 120)
        try download(app.url + "/thumbs/1", to: Bench.work + "/burst-warm.png")
        let idle = try latency(app.url, path: "/thumbs/1", seconds: seconds)

        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(120))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let base = app.url
        async let during = Task.detached { try latency(base, path: "/thumbs/1", seconds: seconds) }.value
        let start = ContinuousClock.now
        let paths = (0..<pieces).flatMap { ["/thumbs/\($0)", "/large/\($0)"] }
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            var next = 0
            func addNext() {
                guard next < paths.count else { return }
                let path = paths[next]
                next += 1
                group.addTask {
                    let response = try await client.execute(HTTPClientRequest(url: base + path), timeout: .seconds(120))
                    _ = try await response.body.collect(upTo: 10 << 20)
                    // The missing pieces answer 404, as they should; anything else is a failure.
                    return response.status == .ok || response.status == .notFound ? 0 : 1
                }
            }
            for _ in 0..<64 { addNext() }
            var failures = 0
            for try await failed in group {
                failures += failed
                addNext()
            }
            return failures
        }
        let burstTime = start.duration(to: .now)
        let burst = try await during
        try await client.shutdown()
        let status = try String(contentsOfFile: "/proc/\(app.process.processIdentifier)/status", encoding: .utf8)
        let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
            .flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        return Result(idle: idle, burst: burst, burstTime: burstTime, failures: failures, peakRSS: peak)
    }

    /// wrk with latency statistics on one path: p50 and p99 in milliseconds.
    static func latency(_ base: String, path: String, seconds: Int) throws -> Latency {
        guard let wrk = Bench.which("wrk") else { throw BenchError("wrk is missing: run scripts/bootstrap bench") }
        let output = try Bench.run(wrk, ["-t1", "-c8", "-d\(seconds)s", "--latency", base + path])
        func percentile(_ label: String) throws -> Double {
            guard let line = output.split(separator: "\n").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }),
                  let value = line.split(separator: " ").last
            else { throw BenchError("no \(label) line in wrk's output:\n\(output)") }
            let text = String(value)
            for (unit, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(unit) {
                if let number = Double(text.dropLast(unit.count)) { return number * scale }
            }
            throw BenchError("cannot read \(text) in wrk's output")
        }
        return Latency(p50: try percentile("50%"), p99: try percentile("99%"))
    }
}
