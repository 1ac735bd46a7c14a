import EmojiArtApp
import Foundation

/// Timing, subprocesses, wrk and nginx for the benchmarks.
enum Bench {
    static let root = FileManager.default.currentDirectoryPath
    static let work = root + "/.build-bench"
    static let python = work + "/venv/bin/python"
    /// The folder this program was built in (`.build/release`, or `.build-vips-system/release`
    /// with `make bench VIPS=system`): the `emojiart` it runs is the one built beside it.
    static let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().path
    static let emojiart = products + "/emojiart"
    /// This program, for the child processes it starts of itself.
    static let benchBinary = products + "/emojiart-bench"

    /// Median milliseconds per call of `body` over 5 runs of `seconds / 5` each, after a warm-up.
    static func millisecondsPerOp(seconds: Double, _ body: () async throws -> Void) async rethrows -> Double {
        try await body()
        var runs: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<5 {
            var count = 0
            let start = clock.now
            var elapsed = Duration.zero
            repeat {
                try await body()
                count += 1
                elapsed = start.duration(to: clock.now)
            } while elapsed < .seconds(seconds / 5)
            runs.append(elapsed.milliseconds / Double(count))
        }
        return runs.sorted()[2]
    }

    /// Runs a command to completion; returns its standard output.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("\(executable) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Finds an executable on PATH.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/usr/sbin"
        let directories: [String] = path.split(separator: ":").map(String.init) + ["/usr/sbin"]
        for directory in directories {
            let path = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// `wrk` over `paths` (rotated by a Lua script) for `seconds`; requests per second.
    static func wrk(_ base: String, paths: [String], seconds: Int, connections: Int = 16) throws -> Double {
        try wrkRun(base, paths: paths, seconds: seconds, connections: connections).requestsPerSecond
    }

    /// What one wrk run measured.
    struct WrkRun {
        var requestsPerSecond: Double
        var requests: Int
    }

    /// `wrk` over `paths` (rotated by a Lua script) for `seconds` with `threads` threads, on CPU
    /// `core` alone when one is given (`taskset`).
    static func wrkRun(_ base: String, paths: [String], seconds: Int, connections: Int = 16, threads: Int = 2, core: Int? = nil) throws -> WrkRun {
        guard let wrk = which("wrk") else { throw BenchError("wrk is missing: run scripts/bootstrap bench") }
        let script = work + "/rotate-\(UUID().uuidString).lua"
        let list = paths.map { "\"\($0)\"" }.joined(separator: ", ")
        try """
        local paths = {\(list)}
        local n = 0
        request = function()
          n = n + 1
          return wrk.format("GET", paths[(n % #paths) + 1])
        end
        """.write(toFile: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: script) }
        let arguments = ["-t\(threads)", "-c\(connections)", "-d\(seconds)s", "-s", script, base]
        let output = try core.map { try run(Pinning.taskset, ["-c", "\($0)", wrk] + arguments) } ?? run(wrk, arguments)
        let lines = output.split(separator: "\n")
        guard let line = lines.first(where: { $0.hasPrefix("Requests/sec:") }),
              let value = Double(line.split(separator: " ").last ?? ""),
              let total = lines.first(where: { $0.contains(" requests in ") }),
              let requests = Int(total.split(separator: " ").first ?? "")
        else { throw BenchError("could not read wrk's output:\n\(output)") }
        let errors = lines.filter { $0.contains("Non-2xx") || $0.contains("Socket errors") }
        if !errors.isEmpty { print("  wrk: \(errors.joined(separator: "; "))") }
        return WrkRun(requestsPerSecond: value, requests: requests)
    }

    /// Returns once the app's `/health` says it is ready (verification done), polling a child
    /// process's HTTP route: there is no other way to hear from it.
    static func waitUntilReady(_ app: Server, within seconds: Double) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            try download(app.url + "/health", to: work + "/health.json")
            if try String(contentsOfFile: work + "/health.json", encoding: .utf8).contains("ready") { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchError("the app at \(app.url) was not ready within \(Int(seconds)) s")
    }

    /// A free TCP port on 127.0.0.1.
    static func freePort() -> Int { LoopbackPort.free() }

    /// Prints a Markdown table.
    static func table(_ header: [String], _ rows: [[String]]) {
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            "| " + cells.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: " | ") + " |"
        }
        print(line(header))
        print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|")
        for row in rows { print(line(row)) }
        print("")
    }

    static func format(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }
}

/// A long-running child process (a server), stopped with SIGINT.
final class Server {
    let process = Process()
    private let output = Pipe()
    /// The URL it announced.
    private(set) var url = ""
    /// Everything it printed up to and including the announcement.
    private(set) var announcement = ""

    /// Starts `executable` and waits for a line matching `pattern` (its first capture is the URL).
    init(_ executable: String, _ arguments: [String], announcing pattern: String) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["VIPS_WARNING": "0", "LOG_LEVEL": "warning"]) { $1 }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let regex = try NSRegularExpression(pattern: pattern)
        var buffer = ""
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            buffer += String(decoding: data, as: UTF8.self)
            if let match = regex.firstMatch(in: buffer, range: NSRange(buffer.startIndex..., in: buffer)),
               let range = Range(match.range(at: 1), in: buffer) {
                url = String(buffer[range])
                announcement = buffer
                return
            }
        }
        process.terminate()
        throw BenchError("\(executable) did not announce its URL: \(buffer)")
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// nginx on 127.0.0.1 serving a directory, as the anchor for the HTTP benchmarks.
final class Nginx {
    let port: Int
    let prefix: String
    private let process = Process()

    /// Starts nginx with `locations` (nginx config text) on a free port; `main` goes at the top
    /// of the configuration (`load_module`), `http` inside its `http` block (caches, more servers).
    init(root: String, locations: String, main: String = "", http: String = "") throws {
        guard let nginx = Bench.which("nginx") else { throw BenchError("nginx is missing: run scripts/bootstrap bench") }
        port = Bench.freePort()
        prefix = Bench.work + "/nginx-\(port)"
        try FileManager.default.createDirectory(atPath: prefix + "/logs", withIntermediateDirectories: true)
        let config = """
        \(main)
        worker_processes 2;
        error_log \(prefix)/logs/error.log warn;
        pid \(prefix)/nginx.pid;
        events { worker_connections 1024; }
        http {
          access_log off;
          sendfile on;
          tcp_nopush on;
          keepalive_requests 1000000;
          \(http)
          server {
            listen 127.0.0.1:\(port);
            root \(root);
            \(locations)
          }
        }
        """
        try config.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", prefix, "-c", prefix + "/nginx.conf", "-g", "daemon off;"]
        try process.run()
        Thread.sleep(forTimeInterval: 0.5)
        guard process.isRunning else { throw BenchError("nginx did not start: see \(prefix)/logs/error.log") }
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// The master's process id (its workers are its children).
    var pid: Int32 { process.processIdentifier }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { stop() }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Duration {
    var milliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }
}

/// GET `url` into the file at `path`, and its answer's status line and header fields into the
/// file at `fieldsPath`, if given.
func download(_ url: String, to path: String, fieldsTo fieldsPath: String? = nil) throws {
    try Bench.run("/usr/bin/curl", ["-sf", "-o", path, url] + (fieldsPath.map { ["-D", $0] } ?? []))
}
