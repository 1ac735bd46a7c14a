import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageCache
import Testing
import TestSupport

/// The entry points readers of the book and the article look for.
@Suite struct LoaderAPITests {
    @Test func bookAndArticleEntryPointsShareOneCache() async throws {
        let origin = TestOrigin()
        origin.set("p", .image(payload(4)))
        try await origin.run { (base) async throws in
            let thumbnail = ByteReversingProcessor(identifier: "thumbnail-200")
            let loader = ImageLoader(configuration: .init(baseURL: base, processor: thumbnail))
            let viaPath = try await loader.image("/images/p")
            let url = base.appendingPathComponent("images/p")
            let viaURL = try await loader.fetch(url)
            let viaRequest = try await loader.fetch(URLRequest(url: url))
            #expect(viaPath.data == payload(4).reversed())
            #expect(viaURL == viaPath && viaRequest == viaPath)
            #expect(origin.requests("p") == 1)
            #expect(thumbnail.callCount == 1)
            guard case .completed = loader.state(forKey: url.absoluteString + "#thumbnail-200") else {
                Issue.record("expected .completed")
                return
            }
            var hits = loader.inMemoryAccess.makeAsyncIterator()
            // The first call downloaded; the URL and URLRequest calls were memory hits.
            #expect(await hits.next() == 2)
        }
    }

    /// The engine used directly, as a library user without the book's names would: a pipeline
    /// with a disk, a variant and its original each fetched and stored once, and a book's face
    /// over the same pipeline answering from its memory.
    @Test func theEngineLoadsStoresAndIsSharedByItsFaces() async throws {
        let origin = TestOrigin()
        origin.set("p", .image(payload(7)))
        let directory = TemporaryDirectory()
        try await origin.run { (base) async throws in
            let url = base.appendingPathComponent("images/p")
            let thumbnail = ByteReversingProcessor(identifier: "thumbnail-200")
            let pipeline = ImagePipeline(disk: DiskStorage(directory: directory.url))
            guard case .success = await pipeline.setUp() else {
                Issue.record("the disk did not set up")
                return
            }
            let variant = try await pipeline.image(for: ImageRequest(url: url, processor: thumbnail))
            let task = pipeline.imageTask(with: ImageRequest(url: url, priority: .high))
            #expect(try await task.image.data == payload(7))
            #expect(variant.data == payload(7).reversed())
            #expect(origin.requests("p") == 1 && thumbnail.callCount == 1)
            #expect(pipeline.stats().diskEntries == 2, "the original and its variant are stored")
            #expect(pipeline.stats().memoryHits == 1, "the task's original was in memory")

            let loader = ImageLoader(pipeline: pipeline)
            #expect(try await loader.fetch(url).data == payload(7))
            #expect(pipeline.stats().memoryHits == 2 && origin.requests("p") == 1)
            #expect(loader.configuration.limits == pipeline.configuration.limits)
        }
    }

    @Test func addAndClear() async throws {
        let loader = ImageLoader()
        let image = Image(data: payload(1, size: 10), contentType: "image/png")
        loader.add(image, forKey: "k")
        #expect(loader.cachedImage(forKey: "k") == image)
        loader.clear()
        #expect(loader.cachedImage(forKey: "k") == nil)
        #expect(loader.state(forKey: "k") == nil)
    }

    @Test func aPathWithoutABaseURLIsAClearError() async {
        let loader = ImageLoader()
        await #expect(throws: ImageLoader.Error.invalidURL("/gallery/image?1")) { try await loader.image("/gallery/image?1") }
    }

    @Test func inFlightStateIsVisibleWhileDownloading() async throws {
        let fetcher = GatedFetcher()
        let loader = ImageLoader(fetcher: fetcher)
        let url = URL(string: "http://127.0.0.1:1/x")!
        let task = Task { try await loader.fetch(url) }
        await reach(fetcher.started, 1)
        guard case .inProgress = loader.state(forKey: url.absoluteString) else {
            Issue.record("expected .inProgress")
            return
        }
        #expect(loader.cache.count == 1)
        fetcher.open()
        #expect(try await task.value.data == Array(url.absoluteString.utf8))
        guard case .completed = loader.state(forKey: url.absoluteString) else {
            Issue.record("expected .completed")
            return
        }
    }

    @Test func aReloadInFlightIsListedUnderItsOwnKey() async throws {
        let fetcher = GatedFetcher()
        let loader = ImageLoader(fetcher: fetcher)
        let url = URL(string: "http://127.0.0.1:1/y")!
        let task = Task { try await loader.image(for: ImageRequest(url: url, cachePolicy: .reloadIgnoringCacheData)) }
        await reach(fetcher.started, 1)
        #expect(Array(loader.cache.keys) == [url.absoluteString])
        fetcher.open()
        _ = try await task.value
    }

    @Test func databaseStreamsCountDiskAndOriginAccess() async throws {
        let origin = TestOrigin()
        origin.set("s", .image(payload(5)))
        let directory = TemporaryDirectory()
        try await origin.run { (base) async throws in
            let request = ImageRequest(url: base.appendingPathComponent("images/s"))
            let first = ImageDatabase(configuration: .init(directory: directory.url, synchronizesWrites: false))
            var origins = first.onOriginFetch.makeAsyncIterator()
            #expect(await origins.next() == 0)
            _ = try await first.image(request)
            #expect(await origins.next() == 1)

            let second = ImageDatabase(configuration: .init(directory: directory.url, synchronizesWrites: false))
            var disk = second.onDiskAccess.makeAsyncIterator()
            #expect(await disk.next() == 0)
            _ = try await second.image(request)
            #expect(await disk.next() == 1)
            var memory = second.onMemoryAccess.makeAsyncIterator()
            _ = try await second.image(request)
            #expect(await memory.next() == 1)

            await second.store(image: Image(data: [1, 2, 3], contentType: "image/png"), forKey: "manual")
            #expect(try second.storage.read(forKey: "manual")?.data == [1, 2, 3])
            await second.clear()
            #expect(second.storage.usage.entries == 0)
            #expect(directory.fileNames.filter { $0.count == 64 }.isEmpty)
        }
    }
}
