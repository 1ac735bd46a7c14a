import ArgumentParser
import Foundation
import Imaging

/// `make bench`: EmojiArt's hot paths measured side by side with their anchors in one run.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emojiart-bench",
        abstract: "Benchmarks with their anchors (Pillow, pyvips, nginx, thumbor, a Mutex dictionary, today's answers in Chromium); prints ratios.",
        discussion: "Run from the repository root after `make bench` has built the release binaries and the Python environment."
    )

    enum Section: String, ExpressibleByArgument, CaseIterable {
        case imaging, variants, cache, fetch, gallery, app, catalog, lane, burst, cluster, peers, service, network
    }

    @Option(parsing: .upToNextOption, help: "Sections to run: imaging, variants, cache, fetch, gallery, app, catalog, lane, burst, cluster, peers, service, network (default: all).")
    var only: [Section] = Section.allCases

    @Option(help: "Seconds per measurement.")
    var seconds: Double = 2

    @Option(help: ArgumentHelp("Serve the files under DIR as the raw SwiftNIO anchor of the lane section, then nothing else (the bench starts it).", visibility: .hidden))
    var serveRawNio: String?

    func run() async throws {
        if let serveRawNio { try await RawNIOServer.serve(serveRawNio) }
        try FileManager.default.createDirectory(atPath: Bench.work, withIntermediateDirectories: true)
        // The bench's galleries and apps keep their signing key and trusted keys under .build-bench,
        // not in the user's data directory.
        setenv("XDG_DATA_HOME", Bench.work + "/data", 1)
        try Imaging.start()
        print("# EmojiArt benchmarks (\(ProcessInfo.processInfo.activeProcessorCount) cores)\n")
        for section in only {
            switch section {
            case .imaging: try await ImagingBench.run(seconds: seconds)
            case .variants: try await VariantSetBench.run(seconds: seconds)
            case .cache: try await CacheBench.run(seconds: seconds)
            case .fetch: try await FetchBench.run(seconds: seconds)
            case .gallery: try await HTTPBench.gallery(seconds: max(3, Int(seconds * 2)))
            case .app: try await HTTPBench.app(seconds: max(3, Int(seconds * 2)))
            case .catalog: try await CatalogBench.run()
            case .lane: try await FastLaneBench.run(seconds: max(3, Int(seconds * 2)))
            case .burst: try await BurstBench.run(seconds: max(3, Int(seconds * 2)))
            case .cluster: try await ClusterBench.run(seconds: max(3, Int(seconds * 2)))
            case .peers: try await PeersBench.run(seconds: max(3, Int(seconds * 2)))
            case .service: try await ServiceBench.run(seconds: max(3, Int(seconds * 2)))
            case .network: try NetworkBench.run()
            }
        }
    }
}
