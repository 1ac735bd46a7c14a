import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageCache
import Testing
import TestSupport

/// The entry points readers of the book and the article look for, on the one engine.
@Suite(.timeLimit(.minutes(3))) struct LoaderAPITests {
    @Test func bookAndArticleEntryPointsShareOneCache() async throws {
        let origin = TestOrigin()
        origin.set("p", .image(payload(4)))
        try await origin.run { (base) async throws in
            let thumbnail = ByteReversingProcessor(identifier: "thumbnail-200")
            let pipeline = ImagePipeline(configuration: .init(baseURL: base, processor: thumbnail))
            let viaPath = try await pipeline.image("/images/p")
            let url = base.appendingPathComponent("images/p")
            let viaURL = try await pipeline.fetch(url)
            let viaRequest = try await pipeline.fetch(URLRequest(url: url))
            #expect(viaPath.data == payload(4).reversed())
            #expect(viaURL == viaPath && viaRequest == viaPath)
            #expect(origin.requests("p") == 1)
            #expect(thumbnail.callCount == 1)
            guard case .completed = await pipeline.state(forKey: url.absoluteString + "#thumbnail-200") else {
                Issue.record("expected .completed")
                return
            }
            var hits = pipeline.onMemoryAccess.makeAsyncIterator()
            // The first call downloaded; the URL and URLRequest calls were memory hits.
            #expect(await hits.next() == 2)
        }
    }

    /// The engine used directly, as a library user without the book's names would: a pipeline
    /// with a disk, a variant and its original each fetched and stored once, and the book's
    /// entry point answered from the same memory.
    @Test func theEngineLoadsStoresAndAnswersTheBooksEntryPointsFromItsMemory() async throws {
        let origin = TestOrigin()
        origin.set("p", .image(payload(7)))
        let directory = TemporaryDirectory()
        try await origin.run { (base) async throws in
            let url = base.appendingPathComponent("images/p")
            let thumbnail = ByteReversingProcessor(identifier: "thumbnail-200")
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url))
            guard case .success = await pipeline.setUp() else {
                Issue.record("the disk did not set up")
                return
            }
            let variant = try await pipeline.imageStored(for: ImageRequest(url: url, processor: thumbnail))
            let task = pipeline.imageTask(with: ImageRequest(url: url, priority: .high))
            #expect(try await task.image.data == payload(7))
            #expect(variant.data == payload(7).reversed())
            #expect(origin.requests("p") == 1 && thumbnail.callCount == 1)
            #expect(await pipeline.stats().diskEntries == 2, "the original and its variant are stored")
            #expect(await pipeline.stats().memoryHits == 1, "the task's original was in memory")

            #expect(try await pipeline.fetch(url).data == payload(7))
            #expect(await pipeline.stats().memoryHits == 2 && origin.requests("p") == 1)
        }
    }

    @Test func addAndClear() async throws {
        let pipeline = ImagePipeline()
        let image = Image(data: payload(1, size: 10), contentType: "image/png")
        await pipeline.add(image, forKey: "k")
        #expect(await pipeline.storedImage(forKey: "k") == image)
        await pipeline.clear()
        #expect(await pipeline.storedImage(forKey: "k") == nil)
        #expect(await pipeline.state(forKey: "k") == nil)
    }

    @Test func aPathWithoutABaseURLIsAClearError() async {
        let pipeline = ImagePipeline()
        await #expect(throws: ImagePipeline.Error.invalidURL("/gallery/image?1")) { try await pipeline.image("/gallery/image?1") }
    }

    /// What can never be answered is refused before anything is asked or remembered: a path
    /// that is no URL, a URL without a scheme, an expected SHA-256 that is not 64 hex digits.
    @Test func whatCanNeverBeAnsweredIsRefusedAtOnceAndNotRemembered() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(2)))
        try await origin.run { (base) async throws in
            let pipeline = ImagePipeline(configuration: .init(baseURL: base))
            await #expect(throws: ImagePipeline.Error.invalidURL("not a url at all")) { try await pipeline.image("not a url at all") }
            let schemeless = try #require(URL(string: "images/a"))
            await #expect(throws: ImagePipeline.Error.invalidURL("images/a")) {
                try await pipeline.image(for: ImageRequest(url: schemeless))
            }
            #expect(origin.totalRequests == 0)

            let url = base.appendingPathComponent("images/a")
            let digest = "sha256:" + String(repeating: "z", count: 64)
            await #expect(throws: ImagePipeline.Error.invalidDigest(String(repeating: "z", count: 64))) {
                try await pipeline.image(for: ImageRequest(url: url, expectedSHA256: digest))
            }
            await #expect(throws: ImagePipeline.Error.invalidDigest("abc")) {
                try await pipeline.image(for: ImageRequest(url: url, expectedSHA256: "sha256:abc"))
            }
            #expect(origin.totalRequests == 0, "refused before the origin was asked")
            #expect(await pipeline.state(forKey: url.absoluteString) == nil, "nothing remembered")
            #expect(await pipeline.stats().failures == 0)
            // The next valid request loads at once, with the digest or without.
            #expect(try await pipeline.image(for: ImageRequest(url: url, expectedSHA256: "sha256:" + SHA256Hex.digest(payload(2)))).data == payload(2))
            #expect(origin.requests("a") == 1)
        }
    }

    /// Where each answer came from: the origin, memory, the disk (after memory is emptied), and
    /// a variant made now.
    @Test func aResponseSaysWhereItsImageCameFrom() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(3)))
        let directory = TemporaryDirectory()
        try await origin.run { (base) async throws in
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            let request = ImageRequest(url: base.appendingPathComponent("images/a"))
            let first = try await pipeline.response(for: request)
            #expect(first.source == .network && first.image.data == payload(3))
            #expect(try await pipeline.response(for: request).source == .memory)
            // Until its write ends, memory holds the image for the disk (and answers with it).
            await pipeline.flush()
            await pipeline.clearMemory()
            let fromDisk = try await pipeline.response(for: request)
            #expect(fromDisk.source == .disk && fromDisk.image.data == payload(3))
            let variant = ImageRequest(url: request.url, processor: ByteReversingProcessor())
            let made = try await pipeline.response(for: variant)
            #expect(made.source == .processed && made.image.data == payload(3).reversed())
            #expect(try await pipeline.response(for: variant).source == .memory)
            #expect(origin.requests("a") == 1)
        }
    }

    /// `clear()` empties memory and the disk; `clearMemory()` leaves the disk.
    @Test func clearEmptiesMemoryAndDiskAndClearMemoryLeavesTheDisk() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(1)))
        origin.set("b", .image(payload(2)))
        let directory = TemporaryDirectory()
        try await origin.run { (base) async throws in
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            let requests = ["a", "b"].map { ImageRequest(url: base.appendingPathComponent("images/\($0)")) }
            for request in requests { _ = try await pipeline.imageStored(for: request) }
            #expect(await pipeline.stats().memoryEntries == 2 && pipeline.disk?.usage.entries == 2)

            await pipeline.clearMemory()
            #expect(await pipeline.stats().memoryEntries == 0)
            #expect(pipeline.disk?.usage.entries == 2 && requests.allSatisfy { pipeline.disk?.contains(key: $0.cacheKey) == true })
            #expect(try await pipeline.image(for: requests[0]).data == payload(1))
            #expect(await pipeline.stats().diskHits == 1 && origin.totalRequests == 2, "answered from the disk")

            await pipeline.clear()
            #expect(await pipeline.stats().memoryEntries == 0 && pipeline.disk?.usage.entries == 0)
            #expect(directory.fileNames.filter { $0.count == 64 }.isEmpty)
            #expect(await pipeline.storedImage(forKey: requests[1].cacheKey) == nil)
            #expect(try await pipeline.image(for: requests[1]).data == payload(2))
            #expect(origin.requests("b") == 2, "asked again: neither memory nor disk held it")
        }
    }

    @Test func inFlightStateIsVisibleWhileDownloading() async throws {
        let fetcher = GatedFetcher()
        let pipeline = ImagePipeline(configuration: .init(fetcher: fetcher))
        let url = URL(string: "http://127.0.0.1:1/x")!
        let task = Task { try await pipeline.fetch(url) }
        await reach(fetcher.started, 1)
        guard case .inProgress = await pipeline.state(forKey: url.absoluteString) else {
            Issue.record("expected .inProgress")
            return
        }
        #expect(await pipeline.cache.count == 1)
        fetcher.open()
        #expect(try await task.value.data == pngTagged(url.absoluteString))
        guard case .completed = await pipeline.state(forKey: url.absoluteString) else {
            Issue.record("expected .completed")
            return
        }
    }

    @Test func aReloadInFlightIsListedUnderItsOwnKey() async throws {
        let fetcher = GatedFetcher()
        let pipeline = ImagePipeline(configuration: .init(fetcher: fetcher))
        let url = URL(string: "http://127.0.0.1:1/y")!
        let task = Task { try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .reloadIgnoringCacheData)) }
        await reach(fetcher.started, 1)
        #expect(Array(await pipeline.cache.keys) == [url.absoluteString])
        fetcher.open()
        _ = try await task.value
    }

    @Test func streamsCountDiskMemoryAndOriginAccess() async throws {
        let origin = TestOrigin()
        origin.set("s", .image(payload(5)))
        let directory = TemporaryDirectory()
        try await origin.run { (base) async throws in
            let request = ImageRequest(url: base.appendingPathComponent("images/s"))
            let first = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            var origins = first.onOriginFetch.makeAsyncIterator()
            #expect(await origins.next() == 0)
            _ = try await first.imageStored(for: request)
            #expect(await origins.next() == 1)

            let second = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            var disk = second.onDiskAccess.makeAsyncIterator()
            #expect(await disk.next() == 0)
            _ = try await second.image(for: request)
            #expect(await disk.next() == 1)
            var memory = second.onMemoryAccess.makeAsyncIterator()
            _ = try await second.image(for: request)
            #expect(await memory.next() == 1)

            await second.store(image: Image(data: [1, 2, 3], contentType: "image/png"), forKey: "manual")
            #expect(try second.disk?.read(forKey: "manual")?.data == [1, 2, 3])
            await second.clear()
            #expect(second.disk?.usage.entries == 0)
            #expect(directory.fileNames.filter { $0.count == 64 }.isEmpty)
        }
    }
}
