import Foundation
import Testing
import TestSupport

/// The guides' programs (Snippets/, built by every `swift build`) run as a stranger runs them:
/// as executables, against a real gallery on 127.0.0.1 named by `GALLERY`, each with a cache
/// directory of its own. A program that loads into a disk cache and ends keeps what it loaded.
@Suite(.timeLimit(.minutes(3))) struct SnippetTests {
    /// Where `swift build` put the snippets: beside the test bundle.
    static func executable(_ name: String) -> URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Runs snippet `name` with `environment` added; returns its exit status and output.
    static func run(_ name: String, environment: [String: String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable(name)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // Read to the end first (a full pipe would stop the child), then reap it.
        let data = try await Task.detached { try output.fileHandleForReading.readToEnd() ?? Data() }.value
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func aProgramThatEndsKeepsWhatItLoaded() async throws {
        let cache = TemporaryDirectory()
        try await withGallery { galleryURL, _ in
            let environment = ["GALLERY": galleryURL.absoluteString, "IMAGE_CACHE_DIR": cache.url.path]
            let first = try await Self.run("KeepImagesOnDisk", environment: environment)
            #expect(first.status == 0, "\(first.output)")
            #expect(first.output.contains("disk hits: 0, downloads: 3"), "\(first.output)")
            let second = try await Self.run("KeepImagesOnDisk", environment: environment)
            #expect(second.status == 0, "\(second.output)")
            // Every write of the first run was kept: the second asks the gallery nothing.
            #expect(second.output.contains("disk hits: 3, downloads: 0"), "\(second.output)")
            #expect(second.output.components(separatedBy: "from disk").count == 4, "\(second.output)")
            #expect(try await galleryImageRequests(galleryURL).values.reduce(0, +) == 3)
        }
    }

    @Test(arguments: ["LoadAnImage", "UseTheEngine", "PrioritiesAndPrefetching", "DatabaseWithDiskAndThumbnails"])
    func aGuidesProgramRunsAgainstTheGalleryItNames(name: String) async throws {
        let cache = TemporaryDirectory()
        try await withGallery { galleryURL, _ in
            // XDG_CACHE_HOME: the shared pipeline's disk (PrioritiesAndPrefetching) in the test's directory.
            let result = try await Self.run(name, environment: [
                "GALLERY": galleryURL.absoluteString, "IMAGE_CACHE_DIR": cache.url.path, "XDG_CACHE_HOME": cache.url.path,
                "TMPDIR": cache.url.path,
            ])
            #expect(result.status == 0, "\(name) failed: \(result.output)")
            #expect(try await galleryImageRequests(galleryURL).values.reduce(0, +) > 0, "\(name) asked the gallery nothing")
        }
    }
}
