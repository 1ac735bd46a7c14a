import Foundation
import Imaging

/// Thumbnail to 200x200 PNG: ours against Pillow, pyvips[binary] (pyvips on the same
/// pyvips-binary libvips as ours) and, for the record, pyvips on Debian's libvips 8.14;
/// single-threaded, then our scaling from one thread to two.
enum ImagingBench {
    static let classes = ["art-rgba-png", "art-rgb-png", "art-jpeg", "1024-rgba-png", "1024-rgb-png", "1024-jpeg"]

    /// What one run of Benchmarks/anchors/imaging.py prints.
    struct PeerReport: Decodable {
        let results: [String: [String: Double]]
        let versions: [String: String]
        let bytes: [String: [String: Int]]
        /// What pyvips ran on in that process, read at run time (nil without pyvips).
        let engine: Engine?
    }

    /// pyvips' libvips as the peer's own process saw it: version and the library file it mapped.
    struct Engine: Decodable {
        let api_mode: Bool
        let version: String
        let library: String?

        /// "8.18.7 (/path/libvips.so.42)", for the table's heading.
        var described: String { "\(version) (\(library ?? "no library file"))" }
    }

    static func run(seconds: Double) async throws {
        let inputs = Bench.work + "/imaging-inputs"
        let art = Bench.work + "/art.png"
        try Data(try ArtRenderer().render(emoji: "🎨", palette: .redToYellow)).write(to: URL(fileURLWithPath: art))
        let anchorScript = Bench.root + "/Benchmarks/anchors/imaging.py"
        try Bench.run(Bench.python, [anchorScript, "prepare", art, inputs])
        // --column: the peer checks, in its own process, that pyvips runs the libvips the column
        // names, and exits with its reason (on stderr) before measuring anything when it does not.
        func measure(_ python: String, _ peers: String, column: String) throws -> PeerReport {
            let json = try Bench.run(
                python, [anchorScript, "measure", inputs, "\(seconds)", peers, "--column", column],
                environment: ["VIPS_CONCURRENCY": "1"])
            return try JSONDecoder().decode(PeerReport.self, from: Data(json.utf8))
        }
        let debian = try measure(Bench.python, "pillow,pyvips", column: "debian")
        let binary = try measure(Bench.work + "/vips-binary-venv/bin/python", "pyvips", column: "binary")

        print("## Thumbnail to 200x200 PNG (ms/op, single-threaded; lower is better)\n")
        print("""
            ours: libvips \(Imaging.libvipsVersion) (\(mappedLibvips() ?? "no library file")), SIMD \(Imaging.isVectorised ? "on" : "off"); \
            Pillow \(debian.versions["pillow"] ?? "?"); pyvips[binary] on libvips \(binary.engine?.described ?? "?"); \
            pyvips on Debian's libvips \(debian.engine?.described ?? "?").

            """)
        let files = try FileManager.default.contentsOfDirectory(atPath: inputs)
        var data: [String: [UInt8]] = [:]
        for name in classes {
            let file = try require(files.first { $0.hasPrefix(name) }, "input \(name) missing")
            data[name] = [UInt8](try Data(contentsOf: URL(fileURLWithPath: inputs + "/" + file)))
        }
        let imaging = Imaging()
        var rows: [[String]] = []
        for name in classes {
            let input = data[name]!
            let ours = try await Bench.millisecondsPerOp(seconds: seconds) { _ = try imaging.thumbnail(input, fitting: 200) }
            let bytes = try imaging.thumbnail(input, fitting: 200).data.count
            let pillow = debian.results[name]?["pillow"] ?? .nan
            let pyvipsBinary = binary.results[name]?["pyvips"] ?? .nan
            let pyvipsDebian = debian.results[name]?["pyvips"] ?? .nan
            let best = min(pillow, pyvipsBinary)
            rows.append([
                name, Bench.format(ours), Bench.format(pillow), Bench.format(pyvipsBinary), Bench.format(pyvipsDebian),
                Bench.format(pillow / ours) + "x", Bench.format(pyvipsBinary / ours) + "x",
                Bench.format(best / ours) + "x" + (best / ours >= 1 ? "" : "  (slower)"),
                "\(bytes) / \(binary.bytes[name]?["pyvips"] ?? 0) / \(debian.bytes[name]?["pillow"] ?? 0)",
            ])
        }
        Bench.table([
            "input", "ours", "Pillow", "pyvips[binary]", "pyvips (Debian)", "vs Pillow", "vs pyvips[binary]",
            "vs best", "PNG bytes: ours / pyvips[binary] / Pillow",
        ], rows)

        print("## Thumbnail throughput over all six inputs (images/s)\n")
        let all = classes.map { data[$0]! }
        let one = try await throughput(threads: 1, inputs: all, seconds: seconds)
        let two = try await throughput(threads: 2, inputs: all, seconds: seconds)
        Bench.table(["threads", "images/s", "scaling"], [
            ["1", Bench.format(one, 1), "1.00x"],
            ["2", Bench.format(two, 1), Bench.format(two / one) + "x"],
        ])
    }

    /// The libvips shared library mapped into this process, as the peers report theirs.
    static func mappedLibvips() -> String? {
        // Read to the end: /proc's files say they are empty, so a read of their size gets nothing.
        guard let file = FileHandle(forReadingAtPath: "/proc/self/maps"), let data = try? file.readToEnd() else { return nil }
        try? file.close()
        let maps = String(decoding: data, as: UTF8.self)
        for line in maps.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            if path.split(separator: "/").last?.hasPrefix("libvips") == true { return path }
        }
        return nil
    }

    /// Images per second with `threads` workers thumbnailing round-robin.
    static func throughput(threads: Int, inputs: [[UInt8]], seconds: Double) async throws -> Double {
        let imaging = Imaging()
        let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
        let start = ContinuousClock.now
        let count = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<threads {
                group.addTask {
                    var done = 0
                    var index = worker
                    while ContinuousClock.now < deadline {
                        _ = try imaging.thumbnail(inputs[index % inputs.count], fitting: 200)
                        index += 1
                        done += 1
                    }
                    return done
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(count) / (start.duration(to: .now).milliseconds / 1000)
    }
}

/// `#require` for the bench: unwraps or throws.
func `require`<T>(_ value: T?, _ message: String) throws -> T {
    guard let value else { throw BenchError(message) }
    return value
}
