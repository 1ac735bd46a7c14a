import EmojiArtApp
import Foundation
import GalleryServer
import ImageCache
import Testing
import GalleryFeed

@Suite struct ModelTests {
    @Test func verifiesTheWholeFeedWithMonotonicProgress() async throws {
        try await withGallery { galleryURL, pipeline in
            let model = makeModel(galleryURL, pipeline, concurrency: 4)
            let feed = try await model.loadImages()
            #expect(feed.count == 87)
            // Follows the live progress until it reads done (a stream always delivers its newest value).
            let follower = Task {
                var seen: [Int] = []
                for await progress in model.progress.stream() {
                    seen.append(progress.completed)
                    if progress.completed == 87 { break }
                }
                return seen
            }
            let result = await model.verifyImages()
            #expect(result.total == 87 && result.completed == 87)
            #expect(result.verified == 78)
            #expect(result.missing == 9)
            #expect(result.mismatched == 0 && result.failed == 0)
            let values = await follower.value
            #expect(values == values.sorted(), "progress went backwards: \(values)")
            #expect(values.last == 87)
            // Every unique URL was fetched once: 26 images and the 3 missing pieces.
            let requests = try await galleryImageRequests(galleryURL)
            #expect(requests.values.reduce(0, +) == 29)
            #expect(requests.values.allSatisfy { $0 == 1 })
            #expect(await pipeline.stats().originFetches == 29)
            // Statuses line up with the feed.
            let entries = await model.entries
            for (file, status) in entries {
                #expect(status == (ArtCatalog.book.missing.contains(file.pieceNumber!) ? .missing : .verified))
            }
        }
    }

    @Test func mismatchedBytesAreFlaggedAndTheRestStillVerify() async throws {
        try await withGallery(faults: .init(corruptRate: 0.3, seed: 11)) { galleryURL, pipeline in
            let model = makeModel(galleryURL, pipeline)
            try await model.loadImages()
            let result = await model.verifyImages()
            #expect(result.completed == 87)
            #expect(result.mismatched > 0, "a 30% corrupt rate should corrupt some of 26 images")
            #expect(result.verified > 0)
            #expect(result.missing == 9)
            #expect(result.verified + result.mismatched + result.missing + result.failed == 87)
            // Nothing that failed its checksum was cached: the verified originals, the feed and the
            // three missing pieces' 404s (known-missing entries).
            let stats = await pipeline.stats()
            #expect(stats.diskEntries == result.verified / 3 + 1 + 3)
        }
    }

    @Test func serverErrorsFailItemsWithoutStoppingTheOthers() async throws {
        try await withGallery(faults: .init(failureRate: 1)) { galleryURL, pipeline in
            let model = makeModel(galleryURL, pipeline)
            try await model.loadImages()
            let result = await model.verifyImages()
            #expect(result.completed == 87)
            #expect(result.failed == 78)
            #expect(result.missing == 9)
            let entries = await model.entries
            let failure = try #require(entries.first { if case .failed = $0.status { true } else { false } })
            #expect(failure.status.explanation.contains("500"))
        }
    }

    @Test func truncatedBodiesAndLatencyAreSurvived() async throws {
        try await withGallery(faults: .init(latency: .milliseconds(30), truncateRate: 0.3, seed: 5)) { galleryURL, pipeline in
            let model = makeModel(galleryURL, pipeline, concurrency: 8)
            try await model.loadImages()
            let result = await model.verifyImages()
            #expect(result.completed == 87)
            #expect(result.failed > 0, "a 30% truncate rate should cut some bodies")
            #expect(result.mismatched == 0, "a truncated body must be an error, never a short image")
            #expect(result.verified + result.failed + result.missing == 87)
            // The cut downloads were transient failures: an explicit retry asks again for exactly those (the
            // rest answer from memory) and repairs some. The gallery draws its faults from a seeded sequence,
            // one draw per image request, so which retries are cut again does not depend on timing.
            let again = makeModel(galleryURL, pipeline)
            try await again.loadImages()
            let retried = await again.verifyImages(retryingFailures: true)
            #expect(retried.verified > result.verified)
            #expect(retried.failed < result.failed)
            #expect(retried.verified + retried.failed + retried.missing == 87)
        }
    }

    @Test func aDeadGalleryEndsInAFailedPhaseWithAMessage() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dead-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory))
        let model = makeModel(URL(string: "http://127.0.0.1:9")!, pipeline)
        await #expect(throws: EmojiArtModel.Error.self) { try await model.loadImages() }
        await model.loadAndVerify()
        guard case let .failed(message) = model.phase.value else {
            Issue.record("expected .failed, got \(model.phase.value)")
            return
        }
        #expect(message.contains("not answering") && message.contains("retry"))
    }

    @Test func pricesReadAsMoney() {
        #expect(ImageFile(name: "", url: "", price: 1234.5, checksum: "").formattedPrice == "$1,234.50")
        #expect(ImageFile(name: "", url: "", price: 5, checksum: "").formattedPrice == "$5.00")
        #expect(ImageFile(name: "", url: "", price: 999.99, checksum: "").formattedPrice == "$999.99")
        #expect(ImageFile(name: "", url: "/gallery/image?17", price: 1, checksum: "").pieceNumber == 17)
    }
}
