import Foundation

/// The catalog in real Chromium over emulated networks (Benchmarks/network.py, with selenium from
/// the browser test's environment): today's answers against AVIF/WebP by Accept and compressed
/// pages, direct and through `emojiart cluster --tls`, at device pixel ratio 1 and 2.
enum NetworkBench {
    static func run() throws {
        print("## Network: the catalog in Chromium, time to the first screen's thumbnails and bytes moved\n")
        let python = Bench.root + "/.build-venv/bin/python"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            print("(skipped: no selenium environment; `make bench` makes .build-venv)\n")
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Bench.root + "/Benchmarks/network.py", Bench.emojiart]
        try process.run()
        process.waitUntilExit()
        print("")
    }
}
