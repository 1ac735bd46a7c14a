import EmojiArtApp
import Foundation
import GalleryServer
@testable import ImageCache
import MessageSignatures
import Testing
import TestSupport

/// The cache as a person meets it through `emojiart sync`, against a real gallery on 127.0.0.1
/// and a real cache directory: a complete cache says so offline and while the gallery is down (its
/// three missing pieces are missing, not failed), the summary's origin numbers add up, and a
/// planted feed entry whose dates no HTTP date can carry neither kills `sync` nor app start.
@Suite(.timeLimit(.minutes(3))) struct CompleteCacheTests {
    let cli = CommandLineTests()

    /// The value of a summary row, e.g. `origin fetches  29`.
    static func row(_ name: String, in output: String) -> Int? {
        for line in output.split(separator: "\n") where line.hasPrefix(name + "  ") {
            if let value = Int(line.dropFirst(name.count).trimmingCharacters(in: .whitespaces)) { return value }
        }
        return nil
    }

    /// The origin rows: every request sent ends as exactly one of them.
    static func expectOriginRowsAddUp(_ output: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let parts = ["downloaded", "not modified", "not found", "error answers", "no answer"].map { row($0, in: output) }
        let total = row("origin fetches", in: output)
        #expect(parts.allSatisfy { $0 != nil } && total != nil, "\(output)", sourceLocation: sourceLocation)
        #expect(parts.compactMap { $0 }.reduce(0, +) == total, "\(output)", sourceLocation: sourceLocation)
    }

    @Test func syncOfflineOnACompleteCacheExitsZeroWithTheThreeMissingPieces() async throws {
        let cache = TemporaryDirectory()
        try await withLiveServer({ try await Gallery.buildApplication(.init(port: 0), onServerRunning: $0) }) { port in
            let online = try await cli.run(["sync", "--gallery", "http://127.0.0.1:\(port)", "--cache-dir", cache.url.path])
            #expect(online.status == 0, "\(online.output)")
            #expect(Self.row("not found", in: online.output) == 3, "\(online.output)")
            Self.expectOriginRowsAddUp(online.output)

            let offline = try await cli.run(["sync", "--offline", "--gallery", "http://127.0.0.1:\(port)", "--cache-dir", cache.url.path])
            #expect(offline.status == 0, "\(offline.output)")
            #expect(Self.row("verified", in: offline.output) == 78)
            #expect(Self.row("missing", in: offline.output) == 9, "three pieces, each listed three times")
            #expect(Self.row("failed", in: offline.output) == 0)
            #expect(Self.row("not cached", in: offline.output) == nil, "\(offline.output)")
            #expect(Self.row("known missing", in: offline.output) == 3)
            #expect(Self.row("origin fetches", in: offline.output) == 0)
            #expect(offline.output.contains("missing from the gallery (404, expected): /gallery/image?0, /gallery/image?10, /gallery/image?20"), "\(offline.output)")
        }
    }

    /// The run: the gallery stopped, every entry stale (`max-age=0`). Each image is asked
    /// for and gets no answer; the stored copies are answered, the missing pieces stay missing,
    /// and nothing is "downloaded".
    @Test func aSyncWhileTheGalleryIsDownReportsMissingNotFailedAndItsNumbersAddUp() async throws {
        let cache = TemporaryDirectory()
        let port = try await withLiveServer({
            try await Gallery.buildApplication(.init(port: 0, maxAge: 0), onServerRunning: $0)
        }) { port in
            let online = try await cli.run(["sync", "--gallery", "http://127.0.0.1:\(port)", "--cache-dir", cache.url.path])
            #expect(online.status == 0, "\(online.output)")
            return port
        }
        let down = try await cli.run(["sync", "--gallery", "http://127.0.0.1:\(port)", "--cache-dir", cache.url.path])
        #expect(down.status == 0, "\(down.output)")
        #expect(down.output.contains("the gallery is unreachable"), "\(down.output)")
        #expect(Self.row("verified", in: down.output) == 78, "\(down.output)")
        #expect(Self.row("missing", in: down.output) == 9)
        #expect(Self.row("failed", in: down.output) == 0)
        #expect(Self.row("downloaded", in: down.output) == 0)
        #expect((Self.row("no answer", in: down.output) ?? 0) > 0)
        #expect(Self.row("no answer", in: down.output) == Self.row("origin fetches", in: down.output))
        Self.expectOriginRowsAddUp(down.output)
    }

    /// Issue 25, finding 2: the feed's entry re-sealed with a Last-Modified of 1e19 seconds once
    /// made every `sync` and app start die in `HTTPDate.format`. It is refused as damaged now, and
    /// the feed is fetched again.
    @Test func aPlantedFeedDateOf1e19NeitherKillsSyncNorAppStart() async throws {
        let cache = TemporaryDirectory()
        let key = SigningKey()
        try await withLiveServer({
            try await Gallery.buildApplication(.init(port: 0, signingKey: key), onServerRunning: $0)
        }) { port in
            let gallery = "http://127.0.0.1:\(port)"
            let sync = ["sync", "--gallery", gallery, "--cache-dir", cache.url.path]
            let first = try await cli.run(sync)
            #expect(first.status == 0, "\(first.output)")
            let feedKey = gallery + "/gallery/images#verified-by=" + key.fingerprint
            let file = cache.url.appendingPathComponent(DiskStorage(directory: cache.url).fileName(forKey: feedKey))
            func plant() throws {
                var bytes = [UInt8](try Data(contentsOf: file))
                try ExtremeEntries.setDate(&bytes, field: 1, to: 1e19)
                try Data(bytes).write(to: file)
            }

            try plant()
            let again = try await cli.run(sync)
            #expect(again.status == 0, "exit \(again.status): \(again.output)")
            #expect(again.output.contains("dropped 1 damaged cache entry"), "\(again.output)")
            #expect(Self.row("verified", in: again.output) == 78)

            // App start: the model loads its catalog through the same stored entry.
            try plant()
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false))
            let model = EmojiArtModel(
                galleryURL: URL(string: gallery)!, pipeline: pipeline, trust: .pinned(fingerprint: key.fingerprint)
            )
            let feed = try await model.loadImages()
            #expect(feed.count == 87)
            #expect(await pipeline.stats().corruptEntries == 1)
        }
    }
}
