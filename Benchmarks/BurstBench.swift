import AsyncHTTPClient
import Foundation
import GalleryServer
import NIOCore
import NIOHTTP1
import Synchronization

/// Memory hits while a burst of cold work runs: the cache's scheduling (processing on worker
/// threads, stage limits, priorities) keeps them answered at their idle speed. The first
/// edition's unscheduled rows were dropped with its code path; their last figures are in
/// docs/benchmarks.md.
enum BurstBench {
    static let pieces = 500

    static func run(seconds: Int) async throws {
        print("## Burst: memory hits while \(pieces) pieces' thumbnails and details images are made cold (gallery --pieces \(pieces))\n")
        print("""
            The burst: \(pieces) /thumbs/N and \(pieces) /large/N, 64 at a time (the originals are on disk and in memory from
            start-up verification, so the burst is processing; the 50 missing pieces answer 404). Each row is a new app
            process with a new cache directory. With wrk: wrk (-t1 -c8, \(seconds) s, --latency) on the memory hit /thumbs/1, idle,
            then starting with the burst; wrk asks as fast as it is answered, so the more it is answered the more CPU it
            takes from the burst. At a fixed rate: 200 GET /thumbs/1 per second during the burst. Peak RSS is the app's
            VmHWM after the burst.

            """)
        let gallery = try Server(
            Bench.emojiart, ["gallery", "--port", "0", "--pieces", "\(pieces)"], announcing: #"serving (http://[^/\s]+)"#
        )
        defer { gallery.stop() }
        let configurations = [("scheduled", [String]())]
        var withWrk: [String: WrkResult] = [:]
        var atRate: [String: RateResult] = [:]
        for (label, flags) in configurations {
            withWrk[label] = try await measureWithWrk(gallery: gallery.url, flags: flags, seconds: seconds)
            atRate[label] = try await measureAtFixedRate(gallery: gallery.url, flags: flags)
        }
        Bench.table(
            ["scheduling, with wrk", "idle p50 ms", "idle p99 ms", "burst p50 ms", "burst p99 ms", "p99 burst/idle", "hits answered in burst", "burst wall ms", "peak RSS"],
            configurations.map { label, _ in
                let result = withWrk[label]!
                return [
                    label, Bench.format(result.idle.p50), Bench.format(result.idle.p99), Bench.format(result.burst.p50),
                    Bench.format(result.burst.p99), Bench.format(result.burst.p99 / result.idle.p99) + "x",
                    "\(result.burst.requests)", Bench.format(result.burstTime.milliseconds, 0), "\(result.peakRSS / 1024) MB",
                ]
            }
        )
        Bench.table(
            ["scheduling, 200 hits/s", "hit p50 ms", "hit p99 ms", "burst wall ms", "failed", "peak RSS"],
            configurations.map { label, _ in
                let result = atRate[label]!
                return [
                    label, Bench.format(result.probe.p50), Bench.format(result.probe.p99),
                    Bench.format(result.burstTime.milliseconds, 0), "\(result.failures)", "\(result.peakRSS / 1024) MB",
                ]
            }
        )
        let scheduled = configurations[0].0
        print("""
            Target: memory-hit p99 during the burst <= 3x idle (with wrk: \(Bench.format(withWrk[scheduled]!.burst.p99 / withWrk[scheduled]!.idle.p99))x; \
            at 200 hits/s: \(Bench.format(atRate[scheduled]!.probe.p99 / withWrk[scheduled]!.idle.p99))x the idle p99 measured with wrk).

            """)
    }

    struct Latency { var p50: Double; var p99: Double; var requests = 0 }

    struct WrkResult {
        var idle: Latency
        var burst: Latency
        var burstTime: Duration
        var peakRSS: Int
    }

    struct RateResult {
        var probe: Latency
        var burstTime: Duration
        var failures: Int
        var peakRSS: Int
    }

    /// An app on a new cache directory, verified and with /thumbs/1 in memory.
    static func startApp(gallery: String, flags: [String]) async throws -> Server {
        let cache = Bench.work + "/burst-cache"
        try? FileManager.default.removeItem(atPath: cache)
        let app = try Server(
            Bench.emojiart, ["app", "--warm-up-budget", "0", "--port", "0", "--gallery", gallery, "--cache-dir", cache] + flags,
            announcing: #"open (http://[^/\s]+)"#
        )
        try await Bench.waitUntilReady(app, within: 120)
        try download(app.url + "/thumbs/1", to: Bench.work + "/burst-warm.png")
        return app
    }

    static func measureWithWrk(gallery: String, flags: [String], seconds: Int) async throws -> WrkResult {
        let app = try await startApp(gallery: gallery, flags: flags)
        defer { app.stop() }
        let idle = try latency(app.url, path: "/thumbs/1", seconds: seconds)
        let base = app.url
        async let during = Task.detached { try latency(base, path: "/thumbs/1", seconds: seconds) }.value
        let (burstTime, _) = try await burst(base)
        let burst = try await during
        return WrkResult(idle: idle, burst: burst, burstTime: burstTime, peakRSS: peakRSS(app))
    }

    static func measureAtFixedRate(gallery: String, flags: [String]) async throws -> RateResult {
        let app = try await startApp(gallery: gallery, flags: flags)
        defer { app.stop() }
        let base = app.url
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let latencies = Samples()
        let probe = Task {
            await withTaskGroup(of: Void.self) { group in
                while !Task.isCancelled {
                    group.addTask {
                        let start = ContinuousClock.now
                        guard let response = try? await client.execute(HTTPClientRequest(url: base + "/thumbs/1"), timeout: .seconds(30)),
                              (try? await response.body.collect(upTo: 1 << 20)) != nil
                        else { return }
                        let elapsed = start.duration(to: .now).milliseconds
                        latencies.add(elapsed)
                    }
                    try? await Task.sleep(for: .milliseconds(5))  // the probe's rate, not a wait for something
                }
            }
        }
        let (burstTime, failures) = try await burst(base)
        probe.cancel()
        _ = await probe.value
        try await client.shutdown()
        let sorted = latencies.values.sorted()
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        return RateResult(
            probe: Latency(p50: percentile(0.5), p99: percentile(0.99), requests: sorted.count), burstTime: burstTime,
            failures: failures, peakRSS: peakRSS(app)
        )
    }

    /// Every piece's thumbnail and details image, 64 requests at a time: the wall time and the
    /// answers other than 200 and 404.
    static func burst(_ base: String) async throws -> (Duration, failures: Int) {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(120))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
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
        let time = start.duration(to: .now)
        try await client.shutdown()
        return (time, failures)
    }

    /// The app's peak resident set (VmHWM), KiB.
    static func peakRSS(_ app: Server) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(app.process.processIdentifier)/status", encoding: .utf8)) ?? ""
        return status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
            .flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
    }

    /// wrk with latency statistics on one path: p50 and p99 in milliseconds, and the requests
    /// answered.
    static func latency(_ base: String, path: String, seconds: Int) throws -> Latency {
        guard let wrk = Bench.which("wrk") else { throw BenchError("wrk is missing: run scripts/bootstrap bench") }
        let output = try Bench.run(wrk, ["-t1", "-c8", "-d\(seconds)s", "--latency", base + path])
        let lines = output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        func percentile(_ label: String) throws -> Double {
            guard let line = lines.first(where: { $0.hasPrefix(label) }), let value = line.split(separator: " ").last
            else { throw BenchError("no \(label) line in wrk's output:\n\(output)") }
            let text = String(value)
            for (unit, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(unit) {
                if let number = Double(text.dropLast(unit.count)) { return number * scale }
            }
            throw BenchError("cannot read \(text) in wrk's output")
        }
        // "123456 requests in 4.00s, ..."
        let requests = lines.first { $0.contains(" requests in ") }.flatMap { Int($0.split(separator: " ")[0]) } ?? 0
        return Latency(p50: try percentile("50%"), p99: try percentile("99%"), requests: requests)
    }
}

/// Latencies collected from many tasks.
final class Samples: Sendable {
    private let samples = Mutex<[Double]>([])
    func add(_ value: Double) { samples.withLock { $0.append(value) } }
    var values: [Double] { samples.withLock { $0 } }
}
