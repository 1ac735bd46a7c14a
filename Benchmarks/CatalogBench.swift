import Foundation

/// The catalog page's cost per warm load, for the book's 87 entries and a 3,564-entry catalog
/// (`gallery --pieces 1188`), in the app's own CPU time (`/proc/PID/stat`), and the feed requests
/// those loads cost the gallery (its `/metrics`).
enum CatalogBench {
    static let loads = 300

    static func run() async throws {
        print("## The catalog page: the app's CPU per warm `GET /`, 87 and 3,564 entries (`--only catalog`)\n")
        var rows: [[String]] = []
        var perLoad: [Double] = []
        for pieces in [29, 1_188] {
            let gallery = try Server(Bench.emojiart, ["gallery", "--port", "0", "--pieces", "\(pieces)"], announcing: #"serving (http://[^/\s]+)"#)
            defer { gallery.stop() }
            let cache = Bench.work + "/catalog-cache-\(pieces)"
            try? FileManager.default.removeItem(atPath: cache)
            let app = try Server(
                Bench.emojiart, ["app", "--warm-up-budget", "0", "--port", "0", "--gallery", gallery.url, "--cache-dir", cache],
                announcing: #"open (http://[^/\s]+)"#
            )
            defer { app.stop() }
            try await Bench.waitUntilReady(app, within: 900)
            let page = Bench.work + "/catalog-page.html"
            try download(app.url + "/", to: page)  // the warm-up load
            let bytes = (try? FileManager.default.attributesOfItem(atPath: page)[.size] as? Int) ?? 0
            // The first load prefetches the details images of the page it shows, and the app makes
            // their better formats in the background: measured once that work is done, so the
            // CPU counted is the loads'.
            try await waitUntilQuiet(app.process.processIdentifier)
            let feedBefore = try feedRequests(gallery.url)
            let cpuBefore = try cpuSeconds(app.process.processIdentifier)
            let start = ContinuousClock.now
            for _ in 0..<loads { try download(app.url + "/", to: page) }
            let elapsed = start.duration(to: .now)
            let cpu = try cpuSeconds(app.process.processIdentifier) - cpuBefore
            let feed = try feedRequests(gallery.url) - feedBefore
            perLoad.append(cpu / Double(loads))
            rows.append([
                "\(pieces * 3)", "\(bytes)", Bench.format(cpu * 1000 / Double(loads), 3),
                "\(feed) in \(Bench.format(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, 1)) s",
            ])
        }
        Bench.table(["entries", "first page (bytes)", "app CPU ms per load", "feed requests in \(loads) loads"], rows)
        print("Target: 3,564 entries at most 1.5x the CPU of 87 (\(Bench.format(perLoad[1] / perLoad[0]))x); "
            + "at most one feed request per check interval (30 s by default).\n")
    }

    /// Returns once process `pid` used less than 2 % of a core over a second (or after 180 s).
    static func waitUntilQuiet(_ pid: Int32) async throws {
        let deadline = ContinuousClock.now + .seconds(180)
        var last = try cpuSeconds(pid)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .seconds(1))
            let now = try cpuSeconds(pid)
            if now - last < 0.02 { return }
            last = now
        }
    }

    /// A process's user and system CPU time so far, in seconds.
    static func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The command name may hold spaces: fields are counted after its closing parenthesis.
        guard let close = stat.lastIndex(of: ")") else { throw BenchError("cannot read /proc/\(pid)/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw BenchError("cannot read /proc/\(pid)/stat")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The feed requests a gallery has answered, from its `/metrics`.
    static func feedRequests(_ gallery: String) throws -> Int {
        let path = Bench.work + "/gallery-metrics.txt"
        try download(gallery + "/metrics", to: path)
        return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("gallery_http_requests_total{") && $0.contains("route=\"/gallery/images\"") }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0) { $0 + Int($1) }
    }
}
