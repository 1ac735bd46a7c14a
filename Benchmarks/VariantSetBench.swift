import EmojiArtApp
import Foundation
import GalleryServer
import ImageCache
import Imaging
import NIOCore

/// The catalog's variant set: every thumbnail variant the warm-up makes of the gallery's served
/// pieces (AVIF, WebP and PNG at 1x and 2x of the 200 px box), made three ways on one thread:
/// the earlier plan (a decode and a shrink per variant, WebP with sharp YUV at both densities),
/// ours (the app's processors: one decode and one shrink per original, the 1x from the 2x's
/// pixels, WebP at 2x without sharp YUV), and pyvips[binary] doing our plan on the same engine.
/// CPU time of the process (every thread: the AV1 encoder's too), bytes per format, and the
/// worst mean absolute difference from a thumbnail made straight from the original.
enum VariantSetBench {
    /// What `imaging.py variants` prints.
    struct PeerReport: Decodable {
        let cpu_ms: Double
        let bytes: [String: Int]
        let engine: ImagingBench.Engine?
    }

    static let box = 200
    static let formats: [ServedFormat] = [.avif, .webp, .png]

    static func run(seconds: Double) async throws {
        let store = try await ArtStore.load(.book)
        let originals = store.catalog.served.map { [UInt8](buffer: store.pieces[$0].png) }
        let inputs = Bench.work + "/variant-set"
        try? FileManager.default.removeItem(atPath: inputs)
        try FileManager.default.createDirectory(atPath: inputs, withIntermediateDirectories: true)
        for (index, original) in originals.enumerated() {
            try Data(original).write(to: URL(fileURLWithPath: inputs + String(format: "/%03d.png", index)))
        }
        let rounds = max(3, Int(seconds.rounded()))
        let imaging = Imaging()

        // The earlier plan: each variant from the original.
        var earlierBytes: [String: Int] = [:]
        let earlier = try cpuMilliseconds(rounds: rounds) {
            earlierBytes = [:]
            for original in originals {
                for density in [1, 2] {
                    for format in formats {
                        let settings: OutputFormat = format == .webp ? .webp(quality: 97) : format.output(density: density)
                        let made = try imaging.thumbnail(original, fitting: box * density, format: settings)
                        earlierBytes["\(format) \(density)x", default: 0] += made.data.count
                    }
                }
            }
        }

        // Ours: the app's processors, a fresh store of shrunk originals each round.
        var oursBytes: [String: Int] = [:]
        var worst = 0.0
        let images = originals.map { ImageCache.Image(data: $0, contentType: "image/png") }
        let ours = try await cpuMillisecondsAsync(rounds: rounds) {
            oursBytes = [:]
            let shrinks = ShrunkOriginals()
            for image in images {
                for density in [2, 1] {
                    for format in formats {
                        let processor = ThumbnailProcessor(
                            size: box * density, format: format.output(density: density), shrinkBox: box * 2, sharing: shrinks)
                        let made = try await processor.process(image)
                        oursBytes["\(format) \(density)x", default: 0] += made.byteCount
                    }
                }
            }
        }
        // The same plan on Imaging alone: what the processors' layer costs.
        let imagingAlone = try cpuMilliseconds(rounds: rounds) {
            for original in originals {
                let shrunk = try imaging.shrink(original, fitting: box * 2)
                for density in [2, 1] {
                    for format in formats { _ = try imaging.thumbnail(of: shrunk, fitting: box * density, format: format.output(density: density)) }
                }
            }
        }

        // Quality, outside the timing: each of ours against a PNG thumbnail of the original.
        let shrinks = ShrunkOriginals()
        for (image, original) in zip(images, originals) {
            for density in [2, 1] {
                let direct = try imaging.thumbnail(original, fitting: box * density)
                for format in formats {
                    let made = try await ThumbnailProcessor(
                        size: box * density, format: format.output(density: density), shrinkBox: box * 2, sharing: shrinks
                    ).process(image)
                    let shown = try imaging.thumbnail(made.data, width: direct.width, height: direct.height)
                    worst = max(worst, try imaging.meanAbsoluteDifference(shown.data, direct.data))
                }
            }
        }

        let json = try Bench.run(
            Bench.work + "/vips-binary-venv/bin/python",
            [Bench.root + "/Benchmarks/anchors/imaging.py", "variants", inputs, "\(rounds)", "--column", "binary"],
            environment: ["VIPS_CONCURRENCY": "1"])
        let peer = try JSONDecoder().decode(PeerReport.self, from: Data(json.utf8))

        print("## The catalog's variant set (\(originals.count) pieces x AVIF, WebP, PNG x 1x, 2x; CPU ms per set, one thread)\n")
        print("pyvips[binary] on libvips \(peer.engine?.described ?? "?"); median of \(rounds) sets each.\n")
        Bench.table(["plan", "CPU ms", "vs earlier", "vs pyvips[binary], same plan"], [
            ["earlier: a decode and a shrink per variant", Bench.format(earlier), "1.00x", ""],
            ["ours: one per original (app's processors)", Bench.format(ours), Bench.format(ours / earlier) + "x",
             Bench.format(peer.cpu_ms / ours) + "x" + (peer.cpu_ms / ours >= 1 ? "" : "  (slower)")],
            ["the same plan on Imaging alone", Bench.format(imagingAlone), Bench.format(imagingAlone / earlier) + "x",
             Bench.format(peer.cpu_ms / imagingAlone) + "x" + (peer.cpu_ms / imagingAlone >= 1 ? "" : "  (slower)")],
            ["pyvips[binary]: our plan", Bench.format(peer.cpu_ms), Bench.format(peer.cpu_ms / earlier) + "x", ""],
        ])
        var rows: [[String]] = []
        for density in [1, 2] {
            for format in formats {
                let name = "\(format) \(density)x"
                let (before, after) = (earlierBytes[name] ?? 0, oursBytes[name] ?? 0)
                rows.append([name, "\(before / 1024)", "\(after / 1024)", Bench.format(Double(after) / Double(max(1, before))) + "x",
                             "\((peer.bytes[name] ?? 0) / 1024)"])
            }
        }
        let (before, after) = (earlierBytes.values.reduce(0, +), oursBytes.values.reduce(0, +))
        rows.append(["all", "\(before / 1024)", "\(after / 1024)", Bench.format(Double(after) / Double(before)) + "x",
                     "\(peer.bytes.values.reduce(0, +) / 1024)"])
        Bench.table(["variants", "earlier KB", "ours KB", "ours / earlier", "pyvips[binary] KB"], rows)
        print("Worst mean absolute difference of ours from a PNG thumbnail of the original: \(Bench.format(worst)) levels (bound: 2).\n")
    }

    /// The median CPU time of `rounds` runs of `body`, in milliseconds (after one to warm up).
    static func cpuMilliseconds(rounds: Int, _ body: () throws -> Void) throws -> Double {
        try body()
        var runs: [Double] = []
        for _ in 0..<rounds {
            let start = processCPU()
            try body()
            runs.append(processCPU() - start)
        }
        return runs.sorted()[runs.count / 2]
    }

    /// ``cpuMilliseconds(rounds:_:)`` for an async body.
    static func cpuMillisecondsAsync(rounds: Int, _ body: () async throws -> Void) async throws -> Double {
        try await body()
        var runs: [Double] = []
        for _ in 0..<rounds {
            let start = processCPU()
            try await body()
            runs.append(processCPU() - start)
        }
        return runs.sorted()[runs.count / 2]
    }

    /// This process's CPU time so far (every thread), in milliseconds.
    static func processCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1e6
    }
}
