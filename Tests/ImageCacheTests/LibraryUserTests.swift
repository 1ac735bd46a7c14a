import Foundation
import ImageCache
import Synchronization
import Testing
import TestSupport

/// What a library user met first (issue 47): bytes that are no image, URLs no fetcher can ask
/// for, counters that counted the engine's own look-ups, a 304 that said "network", and work
/// that ran off the `ImageDatabase` actor only by the compiler's default. Real origin on
/// 127.0.0.1, real directories.
@Suite(.timeLimit(.minutes(2))) struct LibraryUserTests {
    let directory = TemporaryDirectory()

    // MARK: - Only images are images

    @Test(arguments: [
        ("text", Array("hello".utf8), "text/plain"),
        ("listing", Array("<!DOCTYPE html><html><head><title>Index of /</title></head><body><a href=\"a.png\">a.png</a></body></html>".utf8), "text/html"),
        ("json", Array(#"{"error":"not found"}"#.utf8), "image/png"),  // an error body that claims to be a PNG
        ("svgInHTML", Array("<html><body><svg width=\"1\"></svg></body></html>".utf8), "image/svg+xml"),
    ])
    func bytesThatAreNoImageAreRefusedAndNeverKept(name: String, bytes: [UInt8], contentType: String) async throws {
        let origin = TestOrigin()
        origin.set(name, .image(bytes, contentType: contentType))
        try await origin.run { base in
            let url = base.appendingPathComponent("images/\(name)")
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            await #expect(throws: ImagePipeline.Error.notAnImage(url: url.absoluteString, contentType: contentType)) {
                try await pipeline.image(for: ImageRequest(url: url))
            }
            await pipeline.flush()
            #expect(await pipeline.storedImage(forKey: url.absoluteString) == nil, "kept in memory or on disk")
            #expect(await pipeline.stats().diskEntries == 0)

            // A request that wants the data says so, and gets it under a key of its own.
            let data = ImageRequest(url: url, acceptsAnyData: true)
            #expect(data.cacheKey != ImageRequest(url: url).cacheKey)
            let answered = try await pipeline.image(for: data)
            #expect(answered.data == bytes)
            // ... which never answers a request for an image: that one is still refused.
            await #expect(throws: ImagePipeline.Error.self) { try await pipeline.image(for: ImageRequest(url: url, retryingFailures: true)) }
        }
    }

    /// Bytes that are no image on disk (kept before the check, or planted under their own digest)
    /// are not answered either: the entry is deleted, counted as damaged, and the image fetched.
    @Test func anOriginalOnDiskThatIsNoImageIsDeletedAndFetchedAgain() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(1)))
        try await origin.run { base in
            let url = base.appendingPathComponent("images/a")
            let text = Array("not an image".utf8)
            let storage = DiskStorage(directory: directory.url, sizeLimit: 1 << 20, synchronizesWrites: false)
            _ = try storage.setUp()
            try storage.write(Image(data: text, contentType: "text/plain", originalSHA256: SHA256Hex.digest(text)), forKey: url.absoluteString)
            let offline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            await #expect(throws: ImagePipeline.Error.notCached(url: url.absoluteString)) {
                try await offline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
            }
            #expect(await offline.stats().corruptEntries == 1)
            let response = try await ImagePipeline(configuration: .init(diskDirectory: directory.url)).response(for: ImageRequest(url: url))
            #expect(response.source == .network && response.image.data == payload(1))
            #expect(origin.requests("a") == 1)
        }
    }

    @Test(arguments: [
        ("png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]),
        ("jpeg", [0xFF, 0xD8, 0xFF, 0xE0, 0, 16]),
        ("gif", Array("GIF89a".utf8) + [1, 0, 1, 0]),
        ("webp", Array("RIFF".utf8) + [36, 0, 0, 0] + Array("WEBPVP8 ".utf8)),
        ("avif", [0, 0, 0, 28] + Array("ftypavif".utf8) + [0, 0, 0, 0] + Array("avifmif1miaf".utf8)),
        ("heic", [0, 0, 0, 24] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)),
        ("svg", Array("\u{FEFF}<?xml version=\"1.0\"?>\n<!-- art -->\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8)),
    ] as [(String, [UInt8])])
    func everyKnownFormatIsAnImage(name: String, bytes: [UInt8]) async throws {
        let origin = TestOrigin()
        origin.set(name, .image(bytes, contentType: "application/octet-stream"))
        try await origin.run { base in
            let image = try await ImagePipeline().image(for: ImageRequest(url: base.appendingPathComponent("images/\(name)")))
            #expect(image.data == bytes)
        }
    }

    @Test func aVideoInAnISOBoxIsNoImage() async throws {
        let origin = TestOrigin()
        let mp4: [UInt8] = [0, 0, 0, 24] + Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isomiso2".utf8)
        origin.set("clip", .image(mp4))
        _ = try await origin.run { base in
            await #expect(throws: ImagePipeline.Error.self) {
                try await ImagePipeline().image(for: ImageRequest(url: base.appendingPathComponent("images/clip")))
            }
        }
    }

    // MARK: - One rule for bad URLs

    @Test(arguments: ["ftp://127.0.0.1/a.png", "file:///etc/passwd", "http:///no-host.png", "data:image/png;base64,iVBORw0KGgo="])
    func aURLNoFetcherCanAskForIsRefusedWhenMadeAndNeverRemembered(url: String) async throws {
        let pipeline = ImagePipeline()
        let request = ImageRequest(url: URL(string: url)!)
        for _ in 0..<2 {
            await #expect(throws: ImagePipeline.Error.invalidURL(url)) { try await pipeline.image(for: request) }
        }
        let stats = await pipeline.stats()
        #expect(stats.failures == 0 && stats.originFetches == 0)
        #expect(await pipeline.state(forKey: request.cacheKey) == nil, "a failure was remembered")
    }

    @Test func aFetcherSaysWhichURLsItCanAskFor() async throws {
        /// Serves `memory:` URLs from a dictionary: a fetcher of another scheme.
        struct SchemeFetcher: ImageFetching {
            func canFetch(_ url: URL) -> Bool { url.scheme == "memory" }
            func fetch(_ request: ImageRequest) async throws -> Image { Image(data: payload(9, size: 64), contentType: "image/png") }
        }
        let pipeline = ImagePipeline(configuration: .init(fetcher: SchemeFetcher()))
        #expect(try await pipeline.image(for: ImageRequest(url: URL(string: "memory:piece")!)).data == payload(9, size: 64))
        await #expect(throws: ImagePipeline.Error.invalidURL("http://127.0.0.1/a")) {
            try await pipeline.image(for: ImageRequest(url: URL(string: "http://127.0.0.1/a")!))
        }
    }

    // MARK: - Counters and sources that mean one thing

    @Test func memoryHitsCountAnswersToCallersOnly() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(1)))
        try await origin.run { base in
            let url = base.appendingPathComponent("images/a")
            let pipeline = ImagePipeline()
            _ = try await pipeline.image(for: ImageRequest(url: url))
            #expect(await pipeline.stats().memoryHits == 0)
            // A variant made from the original in memory: the engine's own look-up, not a hit.
            let variant = ImageRequest(url: url, processor: ByteReversingProcessor())
            #expect(try await pipeline.response(for: variant).source == .processed)
            #expect(await pipeline.stats().memoryHits == 0, "making a variant counted a memory hit")
            // A peek at what is stored is no answer either.
            _ = await pipeline.storedImage(forKey: url.absoluteString)
            #expect(await pipeline.stats().memoryHits == 0)
            // Answers from memory count, one each: the front door's and the synchronous one.
            #expect(try await pipeline.response(for: variant).source == .memory)
            #expect(pipeline.answerFromMemory(ImageRequest(url: url)) != nil)
            #expect(await pipeline.stats().memoryHits == 2)
        }
    }

    @Test func aVariantOfAnOriginalOnDiskCountsNoDiskHit() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(1)))
        try await origin.run { base in
            let url = base.appendingPathComponent("images/a")
            let configuration = ImagePipeline.Configuration(diskDirectory: directory.url, synchronizesWrites: false)
            _ = try await ImagePipeline(configuration: configuration).imageStored(for: ImageRequest(url: url))
            let restarted = ImagePipeline(configuration: configuration)
            #expect(try await restarted.response(for: ImageRequest(url: url, processor: ByteReversingProcessor())).source == .processed)
            #expect(await restarted.stats().diskHits == 0, "the original's read for a variant counted as an answer")
            #expect(try await restarted.response(for: ImageRequest(url: url)).source == .memory)
        }
    }

    @Test func aRevalidatedAnswerSaysItsBytesCameFromDisk() async throws {
        let clock = TestWallClock(Date().addingTimeInterval(-10 * 86_400))  // behind the origin's Date, as in FreshnessTests
        let origin = TestOrigin()
        origin.setCacheControl("max-age=60")
        origin.set("a", .image(payload(1)))
        try await origin.run { base in
            let url = base.appendingPathComponent("images/a")
            let configuration = ImagePipeline.Configuration(diskDirectory: directory.url, synchronizesWrites: false)
            let pipeline = ImagePipeline(configuration: configuration, now: clock.now)
            let first = try await pipeline.response(for: ImageRequest(url: url))
            #expect(first.source == .network && !first.isRevalidated)
            await pipeline.flush()
            clock.advance(by: 61)
            let restarted = ImagePipeline(configuration: configuration, now: clock.now)
            let again = try await restarted.response(for: ImageRequest(url: url))
            #expect(origin.notModified("a") == 1)
            #expect(again.source == .disk && again.isRevalidated, "a 304's answer said \(again.source)")
            // In memory now, refreshed: the next answer is memory's, not revalidated.
            let third = try await restarted.response(for: ImageRequest(url: url))
            #expect(third.source == .memory && !third.isRevalidated)
        }
    }

    // MARK: - One place for pending writes

    @Test func storeImageIsAWriteFlushWaitsFor() async throws {
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
        await pipeline.store(image: Image(data: payload(5, size: 100), contentType: "image/png"), forKey: "manual")
        await pipeline.flush()
        let stats = await pipeline.stats()
        #expect(stats.pendingWrites == 0 && stats.diskEntries == 1)
        let restarted = ImagePipeline(configuration: .init(diskDirectory: directory.url))
        #expect(await restarted.storedImage(forKey: "manual")?.data == payload(5, size: 100))
    }

    @Test func flushWaitsForEveryAnswersWrite() async throws {
        let origin = TestOrigin()
        for name in ["a", "b", "c"] { origin.set(name, .image(payload(name.hashValue, size: 40_000))) }
        try await origin.run { base in
            let configuration = ImagePipeline.Configuration(diskDirectory: directory.url, synchronizesWrites: true)
            let pipeline = ImagePipeline(configuration: configuration)
            for name in ["a", "b", "c"] { _ = try await pipeline.image(for: ImageRequest(url: base.appendingPathComponent("images/\(name)"))) }
            await pipeline.flush()
            #expect(await pipeline.stats().pendingWrites == 0)
            let restarted = ImagePipeline(configuration: configuration)
            for name in ["a", "b", "c"] {
                #expect(try await restarted.response(for: ImageRequest(url: base.appendingPathComponent("images/\(name)"))).source == .disk)
            }
            #expect(origin.totalRequests == 3)
        }
    }

    // MARK: - Off the actor on purpose

    @Test func theActorRunsWhileAFetchHoldsItsThread() async throws {
        let fetcher = ThreadHoldingFetcher()
        let pipeline = ImagePipeline(configuration: .init(fetcher: fetcher))
        let loading = Task { try await pipeline.image(for: ImageRequest(url: URL(string: "http://127.0.0.1:9/a.png")!)) }
        await reach(fetcher.thread.entered, 1)
        // The fetch holds a thread, not the actor: the actor's bookkeeping answers meanwhile
        // (were the fetch on it, this would wait until the fetcher gives up after a minute).
        #expect(await pipeline.stats().scheduling.downloads.running == 1)
        #expect(await pipeline.waiterCount(forKey: "http://127.0.0.1:9/a.png") == 1)
        fetcher.thread.release()
        let image = try await loading.value
        #expect(image.data == pngTagged("held"))
        #expect(!fetcher.thread.wasStuck, "the fetch held the actor")
    }

    @Test func theActorRunsWhileAProcessorHoldsItsThread() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(1)))
        try await origin.run { base in
            let processor = CallerThreadHoldingProcessor()
            let pipeline = ImagePipeline()
            let url = base.appendingPathComponent("images/a")
            let loading = Task { try await pipeline.image(for: ImageRequest(url: url, processor: processor)) }
            await reach(processor.thread.entered, 1)
            #expect(await pipeline.stats().scheduling.processing.running == 1)
            processor.thread.release()
            let image = try await loading.value
            #expect(image.data == payload(1).reversed())
            #expect(!processor.thread.wasStuck, "the processor held the actor")
        }
    }
}

/// Holds the thread that calls ``hold()`` (blocks it, not merely suspends) until ``release()``,
/// a minute at most: what the doubles below do where they are called. A call that had to give up
/// after the minute is remembered (``wasStuck``): what a call on the actor does to a test that
/// releases it only once the actor answers, and a regression then fails instead of stopping every
/// thread of the process.
final class ThreadHold: Sendable {
    let entered = LiveValue(0)
    private let permits = DispatchSemaphore(value: 0)
    private let stuck = Mutex(false)
    var wasStuck: Bool { stuck.withLock { $0 } }

    func release() { permits.signal() }

    /// Synchronous on purpose: it holds the calling thread.
    func hold() {
        entered.update { $0 += 1 }
        if permits.wait(timeout: .now() + 60) == .timedOut { stuck.withLock { $0 = true } }
    }
}

/// A fetcher that runs where its caller runs (`nonisolated(nonsending)`, as every fetcher is in
/// the next language mode) and holds that thread until released, then answers a small
/// PNG-tagged payload: called on the `ImageDatabase` actor, it would hold the actor. A fault
/// double: the one way to see which executor the pipeline calls a fetch on.
final class ThreadHoldingFetcher: ImageFetching {
    let thread = ThreadHold()

    nonisolated(nonsending) func fetch(_ request: ImageRequest) async throws -> Image {
        thread.hold()
        return Image(data: pngTagged("held"), contentType: "image/png")
    }
}

/// A processor that runs where its caller runs and holds that thread until released, then
/// reverses the bytes: as ``ThreadHoldingFetcher``, for the processing stage.
final class CallerThreadHoldingProcessor: ImageProcessing {
    let identifier = "held-in-place"
    let thread = ThreadHold()

    nonisolated(nonsending) func process(_ image: Image) async throws -> Image {
        thread.hold()
        return Image(data: image.data.reversed(), contentType: image.contentType)
    }
}
