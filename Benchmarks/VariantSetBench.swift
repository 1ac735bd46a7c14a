import EmojiArtApp
import Foundation
import GalleryServer
import ImageCache
import Imaging
import NIOCore

/// The catalog's variant set: every thumbnail variant the warm-up makes of the gallery's served
/// pieces (AVIF, WebP and PNG at 1x and 2x of the 200 px box), made four ways on one thread, the
/// four taking turns round by round: the earlier plan (a decode and a shrink per variant, WebP
/// with sharp YUV at both densities), ours (the app's processors: one decode per original, a PNG
/// kept whole, each box resized once for its three formats, WebP at 2x without sharp YUV), the
/// same plan on `Imaging` alone, and pyvips[binary] doing that plan on the same engine. CPU time
/// of the process (every thread: the AV1 encoder's too), bytes per format, the worst mean
/// absolute difference from a thumbnail made straight from the original; and one 1x PNG alone,
/// as a piece's first request makes it.
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
        let rounds = max(5, Int(seconds.rounded()))
        let imaging = Imaging()

        // With their SHA-256, as the pipeline hands originals to processors (it checked it when
        // the original arrived; the bench does not count that here).
        let images = originals.map { original in
            var image = ImageCache.Image(data: original, contentType: "image/png")
            image.originalSHA256 = SHA256Hex.digest(original)
            return image
        }
        var earlierBytes: [String: Int] = [:]
        var oursBytes: [String: Int] = [:]
        // The earlier plan: each variant from the original.
        func earlierSet() throws {
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
        // Ours: the app's processors, a fresh store of decoded originals each set.
        func oursSet() async throws {
            oursBytes = [:]
            let shrinks = ShrunkOriginals()
            for image in images {
                for density in [2, 1] {
                    for format in formats {
                        let processor = ThumbnailProcessor(
                            size: box * density, format: format.output(density: density), shrinkBox: box * 2, sharing: shrinks,
                            streamsWhenNothingIsKept: format.isQuickToEncode)
                        let made = try await processor.process(image)
                        oursBytes["\(format) \(density)x", default: 0] += made.byteCount
                    }
                }
            }
        }
        // The same plan on Imaging alone: what the processors' layer costs.
        func aloneSet() throws {
            for original in originals {
                let shrunk = try imaging.shrink(original, fitting: box * 2)
                for density in [2, 1] {
                    for format in formats { _ = try imaging.thumbnail(of: shrunk, fitting: box * density, format: format.output(density: density)) }
                }
            }
        }
        // pyvips[binary] doing our plan, one set (after one to warm up) per process.
        var peerBytes: [String: Int] = [:]
        var peerEngine: ImagingBench.Engine?
        func peerSet() throws -> Double {
            let json = try Bench.run(
                Bench.work + "/vips-binary-venv/bin/python",
                [Bench.root + "/Benchmarks/anchors/imaging.py", "variants", inputs, "1", "--column", "binary"],
                environment: ["VIPS_CONCURRENCY": "1"])
            let report = try JSONDecoder().decode(PeerReport.self, from: Data(json.utf8))
            (peerBytes, peerEngine) = (report.bytes, report.engine)
            return report.cpu_ms
        }
        // Round by round, each plan once a round, so the machine's drift falls on all four alike.
        try earlierSet()
        try await oursSet()
        try aloneSet()
        var runs: [String: [Double]] = [:]
        for _ in 0..<rounds {
            runs["earlier", default: []].append(try cpu { try earlierSet() })
            let start = processCPU()
            try await oursSet()
            runs["ours", default: []].append(processCPU() - start)
            runs["alone", default: []].append(try cpu { try aloneSet() })
            runs["peer", default: []].append(try peerSet())
        }
        let median = { (name: String) in runs[name]!.sorted()[rounds / 2] }
        let (earlier, ours, imagingAlone, peerCPU) = (median("earlier"), median("ours"), median("alone"), median("peer"))

        // One 1x PNG, alone: what a piece's first request costs (a fresh store: decoded for it).
        let first = images[0]
        let direct = try await Bench.millisecondsPerOp(seconds: seconds) { _ = try imaging.thumbnail(originals[0], fitting: box) }
        let throughStore = try await Bench.millisecondsPerOp(seconds: seconds) {
            _ = try await ThumbnailProcessor(size: box, shrinkBox: box * 2, sharing: ShrunkOriginals(), streamsWhenNothingIsKept: true).process(first)
        }
        let decodingFirst = try await Bench.millisecondsPerOp(seconds: seconds) {
            _ = try await ThumbnailProcessor(size: box, shrinkBox: box * 2, sharing: ShrunkOriginals()).process(first)
        }

        // Quality, outside the timing: each of ours against a PNG thumbnail of the original.
        var worst = 0.0
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

        print("## The catalog's variant set (\(originals.count) pieces x AVIF, WebP, PNG x 1x, 2x; CPU ms per set, one thread)\n")
        print("pyvips[binary] on libvips \(peerEngine?.described ?? "?"); median of \(rounds) sets each, the plans taking turns.\n")
        Bench.table(["plan", "CPU ms", "vs earlier", "vs pyvips[binary], same plan"], [
            ["earlier: a decode and a shrink per variant", Bench.format(earlier), "1.00x", ""],
            ["ours: one per original (app's processors)", Bench.format(ours), Bench.format(ours / earlier) + "x",
             Bench.format(peerCPU / ours) + "x" + (peerCPU / ours >= 1 ? "" : "  (slower)")],
            ["the same plan on Imaging alone", Bench.format(imagingAlone), Bench.format(imagingAlone / earlier) + "x",
             Bench.format(peerCPU / imagingAlone) + "x" + (peerCPU / imagingAlone >= 1 ? "" : "  (slower)")],
            ["pyvips[binary]: our plan", Bench.format(peerCPU), Bench.format(peerCPU / earlier) + "x", ""],
        ])
        var rows: [[String]] = []
        for density in [1, 2] {
            for format in formats {
                let name = "\(format) \(density)x"
                let (before, after) = (earlierBytes[name] ?? 0, oursBytes[name] ?? 0)
                rows.append([name, "\(before / 1024)", "\(after / 1024)", Bench.format(Double(after) / Double(max(1, before))) + "x",
                             "\((peerBytes[name] ?? 0) / 1024)"])
            }
        }
        let (before, after) = (earlierBytes.values.reduce(0, +), oursBytes.values.reduce(0, +))
        rows.append(["all", "\(before / 1024)", "\(after / 1024)", Bench.format(Double(after) / Double(before)) + "x",
                     "\(peerBytes.values.reduce(0, +) / 1024)"])
        Bench.table(["variants", "earlier KB", "ours KB", "ours / earlier", "pyvips[binary] KB"], rows)
        print("Worst mean absolute difference of ours from a PNG thumbnail of the original: \(Bench.format(worst)) levels (bound: 2).\n")
        print("One 1x PNG alone, as a piece's first request makes it (ms/op): from the original \(Bench.format(direct)); "
              + "the app's PNG processor, nothing kept (it streams) \(Bench.format(throughStore)) (\(Bench.format(throughStore / direct))x); "
              + "a processor that decodes and keeps the original for the variants that follow \(Bench.format(decodingFirst)) "
              + "(\(Bench.format(decodingFirst / direct))x).\n")
    }

    /// The CPU time `body` takes, in milliseconds.
    static func cpu(_ body: () throws -> Void) throws -> Double {
        let start = processCPU()
        try body()
        return processCPU() - start
    }

    /// This process's CPU time so far (every thread), in milliseconds.
    static func processCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1e6
    }
}
