import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension ServiceBench {
    /// A memory hit through the service's HTTP server against the raw SwiftNIO server answering
    /// the same header fields (`Date` refreshed) and bytes: wrk over the fit variant of every
    /// source, each server three times in turn, the best run of each kept. Two spellings of the
    /// same variants: the source as URL-safe base64, which the fast lane answers on the event
    /// loop, and after `/plain/` percent-encoded, which it passes to the route (a `%` in a path).
    static func warm(_ service: Server, origin: String, sources: [String], seconds: Int) async throws {
        let fit = operations[0]
        let spellings: [(name: String, paths: [String])] = [
            ("base64 source (fast lane)", sources.map { "/insecure/\(fit.options)/" + base64URL(origin + "/" + $0) }),
            ("plain, percent-encoded source (the route)", sources.map { "/insecure/\(fit.options)/plain/" + encoded(origin + "/" + $0) }),
        ]
        let rawRoot = Bench.work + "/service-raw"
        try? FileManager.default.removeItem(atPath: rawRoot)
        try FileManager.default.createDirectory(atPath: rawRoot + "/variants", withIntermediateDirectories: true)
        for (index, path) in spellings[0].paths.enumerated() {
            let file = rawRoot + "/variants/\(index)"
            try download(service.url + path, to: file, fieldsTo: file + ".fields")
        }
        let raw = try Server(Bench.benchBinary, ["--serve-raw-nio", rawRoot], announcing: #"raw-nio: (http://\S+)"#)
        defer { raw.stop() }
        // The raw server answers /full/… only when the recorded answer had a Date field.
        let rawPaths = sources.indices.map { "/full/variants/\($0)" }
        try download(raw.url + rawPaths[0], to: rawRoot + "/check")
        var ours = [Double](repeating: 0, count: spellings.count), anchor = 0.0
        for _ in 0..<3 {
            for (index, spelling) in spellings.enumerated() {
                ours[index] = max(ours[index], try Bench.wrk(service.url, paths: spelling.paths, seconds: seconds))
            }
            anchor = max(anchor, try Bench.wrk(raw.url, paths: rawPaths, seconds: seconds))
        }
        Bench.table(["warm: memory hit, wrk 16 connections, \(sources.count) variants", "req/s", "vs raw NIO"],
            spellings.indices.map { ["ours, " + spellings[$0].name, Bench.format(ours[$0], 0), Bench.format(ours[$0] / anchor) + "x"] }
                + [["raw SwiftNIO, the same fields and bytes", Bench.format(anchor, 0), "1.00x"]])
        print("Target, warm: at least 0.9x raw SwiftNIO (\(Bench.format(ours[0] / anchor))x through the fast lane, "
            + "\(Bench.format(ours[1] / anchor))x through the route).\n")
    }

    /// `text` as URL-safe base64 without padding, as imgproxy's encoded sources are written.
    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A fresh service: 64 requests at once of the 12 MP JPEGs, each a variant of its own (the
    /// sources are fetched once; the 64 decodes and resizes are not shared), with the process's
    /// peak resident memory after them; then the 60 MP source, which must be refused from its
    /// header, before it is decoded.
    static func limits(origin: String, sources: [String]) async throws {
        let service = try startService(origin: origin, cache: Bench.work + "/service-limits-cache")
        defer { service.stop() }
        let large = sources.filter { $0.contains("-12mp") }
        guard !large.isEmpty else { throw BenchError("no 12 MP sources in \(photos): run scripts/bench-photos") }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(120))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        /// The status, the time to the last byte and, for anything but a 200, the body's text.
        @Sendable func get(_ url: String) async -> (status: UInt, milliseconds: Double, text: String) {
            let began = ContinuousClock.now
            do {
                let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(120))
                var body = try await response.body.collect(upTo: 64 << 20)
                let text = response.status == .ok ? "" : body.readString(length: min(160, body.readableBytes)) ?? ""
                return (response.status.code, began.duration(to: .now).milliseconds, text)
            } catch {
                return (0, began.duration(to: .now).milliseconds, "\(error)")
            }
        }

        let atStart = BurstBench.peakRSS(service)
        let urls = (0..<64).map { index in
            let box = 200 + 10 * (index / large.count)
            return service.url + "/insecure/rs:fit:\(box):\(box)/plain/" + encoded(origin + "/" + large[index % large.count])
        }
        let began = ContinuousClock.now
        let statuses = await withTaskGroup(of: UInt.self) { group in
            for url in urls { group.addTask { await get(url).status } }
            return await group.reduce(into: [UInt]()) { $0.append($1) }
        }
        let burst = began.duration(to: .now).milliseconds
        let peak = BurstBench.peakRSS(service)

        let size = (try? FileManager.default.attributesOfItem(atPath: photos + "/" + oversized)[.size] as? Int) ?? 0
        let refused = await get(service.url + "/insecure/rs:fit:300:300/plain/" + encoded(origin + "/" + oversized))
        try await client.shutdown()

        let failed = statuses.filter { $0 != 200 }.count
        Bench.table(["limits (a fresh service)", "measured", "target"], [
            ["64 requests at once, 12 MP JPEGs (\(large.count) sources x 16 sizes): wall time", "\(Bench.format(burst, 0)) ms, \(failed) not 200", "all 200"],
            ["  peak resident memory of the service (VmHWM)", "\(peak / 1024) MB (\(atStart / 1024) MB before)", "< 600 MB"],
            ["60 MP PNG (8000x7500, \(size / 1024) KB): status", "\(refused.status)", "413"],
            ["  its time", Bench.format(refused.milliseconds, 1) + " ms", "< 50 ms"],
        ])
        print("The 60 MP source's answer: \(refused.text.trimmingCharacters(in: .whitespacesAndNewlines))\n")
    }
}
