import Foundation
import ImageCache
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(3))) struct DiskTests {
    let directory = TemporaryDirectory()

    func pipeline(sizeLimit: Int = 512 * 1024 * 1024) -> ImagePipeline {
        ImagePipeline(configuration: .init(diskDirectory: directory.url, diskSizeLimit: sizeLimit, synchronizesWrites: false))
    }

    var entryFiles: [String] { directory.fileNames.filter { $0.count == 64 } }

    @Test func restartServesFromDiskWithoutTheOrigin() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(1)))
        origin.set("b", .image(payload(2), contentType: "image/webp"))
        try await origin.run { (base) async throws in
            let requests = ["a", "b"].map { ImageRequest(url: base.appendingPathComponent("images/\($0)")) }
            let first = pipeline()
            for request in requests { _ = try await first.imageStored(for: request) }
            #expect(origin.totalRequests == 2)

            let second = pipeline()
            let report = try await second.setUp().get()
            #expect(report.entries == 2)
            let b = try await second.image(for: requests[1])
            #expect(b.data == payload(2))
            #expect(b.contentType == "image/webp")
            _ = try await second.image(for: requests[0])
            let stats = await second.stats()
            #expect(stats.diskHits == 2 && stats.originFetches == 0)
            #expect(origin.totalRequests == 2)
            // Now in memory too.
            _ = try await second.image(for: requests[0])
            #expect(await second.stats().memoryHits == 1)
        }
    }

    /// An original whose bytes were changed on disk under the digest that let them in (a planted
    /// entry, its own checksum made right) is deleted and fetched again, never answered: with the
    /// feed's checksum and without, small (hashed where it is read) and large (hashed on a
    /// processing thread), and planted without a digest (checked against the feed's).
    @Test(arguments: [(30_000, true, true), (30_000, false, true), (1 << 20, true, true), (30_000, true, false)])
    func anOriginalChangedOnDiskIsFetchedAgain(size: Int, withChecksum: Bool, plantedWithDigest: Bool) async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(1, size: size)))
        try await origin.run { (base) async throws in
            let url = base.appendingPathComponent("images/a")
            let request = ImageRequest(url: url, expectedSHA256: withChecksum ? SHA256Hex.digest(payload(1, size: size)) : nil)
            let genuine = try await pipeline().imageStored(for: request)
            #expect(genuine.originalSHA256 == SHA256Hex.digest(payload(1, size: size)))
            // With the genuine digest kept, or (against the feed's checksum) with no digest and no
            // headers, which the lookup alone would answer as an image stored by hand.
            let planted = !plantedWithDigest
                ? Image(data: payload(2, size: size), contentType: genuine.contentType)
                : Image(
                    data: payload(2, size: size), contentType: genuine.contentType, cacheHeaders: genuine.cacheHeaders,
                    originalSHA256: genuine.originalSHA256
                )
            let second = pipeline()
            _ = try await second.setUp().get()
            let disk = try #require(second.disk)
            try disk.write(planted, forKey: request.cacheKey)
            #expect(try disk.read(forKey: request.cacheKey)?.data == planted.data, "a valid entry")

            #expect(try await second.imageStored(for: request).data == payload(1, size: size))
            let stats = await second.stats()
            #expect(stats.corruptEntries == 1 && stats.diskHits == 0 && stats.downloads == 1)
            #expect(origin.totalRequests == 2)
            #expect(try disk.read(forKey: request.cacheKey)?.data == payload(1, size: size), "stored again")
        }
    }

    /// An original planted with the digest of its own bytes (and the genuine validators) passes
    /// the disk's check, but not the request's: it is asked for whole, so the origin's bytes
    /// replace it. Before, it was revalidated, the 304 confirmed the planted bytes, and every load
    /// was a checksum mismatch blamed on the origin (found by an attacker, round 3).
    @Test func anOriginalPlantedWithItsOwnDigestIsReplacedByTheOriginsBytes() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(1)))
        try await origin.run { (base) async throws in
            let request = ImageRequest(url: base.appendingPathComponent("images/a"), expectedSHA256: SHA256Hex.digest(payload(1)))
            let genuine = try await pipeline().imageStored(for: request)
            let planted = Image(
                data: payload(2), contentType: genuine.contentType, cacheHeaders: genuine.cacheHeaders,
                originalSHA256: SHA256Hex.digest(payload(2))
            )
            let second = pipeline()
            _ = try await second.setUp().get()
            let disk = try #require(second.disk)
            try disk.write(planted, forKey: request.cacheKey)

            #expect(try await second.imageStored(for: request).data == payload(1))
            #expect(origin.requests("a") == 2 && origin.notModified("a") == 0, "asked for whole, not revalidated")
            #expect(await second.stats().downloads == 1)
            #expect(try disk.read(forKey: request.cacheKey)?.data == payload(1), "stored again")
        }
    }

    /// Nor is such an original answered when the origin cannot give the bytes (a 503: a stale
    /// answer would be allowed for the bytes expected) or when nothing may be loaded (offline):
    /// before, both answered the planted bytes as the ones the request expected (cold review).
    @Test(arguments: [false, true])
    func anOriginalOfOtherBytesIsNeverAnsweredForTheExpectedOnes(offline: Bool) async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(1)))
        try await origin.run { (base) async throws in
            let url = base.appendingPathComponent("images/a")
            let genuine = try await pipeline().imageStored(for: ImageRequest(url: url, expectedSHA256: SHA256Hex.digest(payload(1))))
            let planted = Image(
                data: payload(2), contentType: genuine.contentType, cacheHeaders: genuine.cacheHeaders,
                originalSHA256: SHA256Hex.digest(payload(2))
            )
            let second = pipeline()
            _ = try await second.setUp().get()
            let request = ImageRequest(
                url: url, expectedSHA256: SHA256Hex.digest(payload(1)), cachePolicy: offline ? .returnCacheDataDontLoad : .useProtocolCachePolicy
            )
            try #require(second.disk).write(planted, forKey: request.cacheKey)
            origin.set("a", .status(503))

            let error = await #expect(throws: ImagePipeline.Error.self) { try await second.image(for: request) }
            if offline {
                #expect(error == .notCached(url: url.absoluteString))
                #expect(origin.requests("a") == 1)
            } else {
                #expect(error == .httpStatus(503, url: url.absoluteString))
                #expect(await second.stats().staleAnswers == 0)
            }
        }
    }

    /// `isCached` answers from memory or the disk's listing; the disk's index alone
    /// (`disk.contains(key:)`) says what a memory miss would find there. `store(image:forKey:)`
    /// keeps the image in both.
    @Test func isCachedSaysMemoryOrDiskAndTheDiskIndexOnlyTheDisk() async throws {
        let pipeline = pipeline()
        _ = try await pipeline.setUp().get()
        let disk = try #require(pipeline.disk)
        let stored = ImageRequest(url: URL(string: "http://127.0.0.1:1/stored")!)
        let inMemoryOnly = ImageRequest(url: URL(string: "http://127.0.0.1:1/memory")!)
        #expect(pipeline.answerFromMemory(stored) == nil && pipeline.answerFromMemory(inMemoryOnly) == nil, "an empty cache answered")
        #expect(!pipeline.isCached(stored) && !disk.contains(key: stored.cacheKey))

        await pipeline.store(image: Image(data: payload(3), contentType: "image/png"), forKey: stored.cacheKey)
        #expect(pipeline.isCached(stored) && disk.contains(key: stored.cacheKey))
        #expect(try disk.read(forKey: stored.cacheKey)?.data == payload(3))
        #expect(pipeline.answerFromMemory(stored)?.data == payload(3))

        await pipeline.add(Image(data: payload(4), contentType: "image/png"), forKey: inMemoryOnly.cacheKey)
        #expect(pipeline.isCached(inMemoryOnly), "memory holds it")
        #expect(!disk.contains(key: inMemoryOnly.cacheKey), "not on disk")

        await pipeline.clearMemory()
        #expect(pipeline.isCached(stored) && disk.contains(key: stored.cacheKey), "the disk still lists it")
        #expect(!pipeline.isCached(inMemoryOnly))
    }

    /// A temporary file is a leftover when its writer is gone, or when it was not written for an
    /// hour: a process id is reused, and a leftover named for a running process (PID 1) stayed
    /// for ever before (attacker round 3). A live writer's recent file stays.
    @Test func setUpRemovesLeftoversOfGoneOrSilentWritersOnly() async throws {
        var gone: pid_t = 999_999
        while kill(gone, 0) == 0 || errno != ESRCH { gone += 1 }  // a process id nobody has now
        let dead = directory.url.appendingPathComponent(".tmp-\(gone)-abc")
        let live = directory.url.appendingPathComponent(".tmp-\(getpid())-def")
        let stale = directory.url.appendingPathComponent(".tmp-1-0123")
        let recent = directory.url.appendingPathComponent(".tmp-1-4567")
        for file in [dead, live, stale, recent] { try Data([1, 2, 3]).write(to: file) }
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3_700)], ofItemAtPath: stale.path)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3_500)], ofItemAtPath: recent.path)
        let report = try await pipeline().setUp().get()
        #expect(report.removedTemporaryFiles == 2)
        #expect(Set(directory.fileNames.filter { $0.hasPrefix(".tmp-") }) == [live.lastPathComponent, recent.lastPathComponent])
    }

    @Test func sizeLimitIsNeverExceededByMoreThanOneEntry() throws {
        let limit = 200_000
        let storage = DiskStorage(directory: directory.url, sizeLimit: limit, synchronizesWrites: false)
        try storage.setUp()
        var largest = 0
        for key in 0..<60 {
            let size = 5_000 + (key * 7_919) % 40_000
            largest = max(largest, size + 200)
            try storage.write(Image(data: payload(key, size: size), contentType: "image/png"), forKey: "key-\(key)")
            let onDisk = try entryFiles.reduce(0) { total, name in
                total + (try FileManager.default.attributesOfItem(atPath: directory.url.appendingPathComponent(name).path)[.size] as! Int)
            }
            #expect(onDisk <= limit + largest, "\(onDisk) bytes on disk after write \(key)")
            #expect(storage.usage.bytes == onDisk)
        }
        // Least recently used went first: the newest entries survive.
        #expect(try storage.read(forKey: "key-59") != nil)
        #expect(try storage.read(forKey: "key-0") == nil)
    }

    @Test func readingAnEntryKeepsItFromEviction() throws {
        let storage = DiskStorage(directory: directory.url, sizeLimit: 100_000, synchronizesWrites: false)
        try storage.setUp()
        for key in 0..<3 { try storage.write(Image(data: payload(key), contentType: "image/png"), forKey: "k\(key)") }
        _ = try storage.read(forKey: "k0")
        try storage.write(Image(data: payload(3), contentType: "image/png"), forKey: "k3")
        #expect(try storage.read(forKey: "k0") != nil)
        #expect(try storage.read(forKey: "k1") == nil)
    }

    @Test(arguments: [
        "../../etc/passwd",
        "/etc/passwd",
        String(repeating: "k", count: 10_240),
        "nul\u{0}inside",
        "images/../../../../tmp/escape",
        "",
    ])
    func hostileKeysStayInsideTheDirectory(key: String) throws {
        let storage = DiskStorage(directory: directory.url, synchronizesWrites: false)
        try storage.setUp()
        try storage.write(Image(data: payload(1, size: 100), contentType: "image/png"), forKey: key)
        #expect(directory.fileNames == [storage.fileName(forKey: key)])
        #expect(storage.fileName(forKey: key).count == 64)
        #expect(try storage.read(forKey: key)?.data == payload(1, size: 100))
        #expect(try storage.read(forKey: key + "x") == nil)
    }

    @Test func anUnwritableDirectoryFallsBackToMemoryAndNetwork() async throws {
        let blocker = directory.url.appendingPathComponent("a-file")
        try Data("not a directory".utf8).write(to: blocker)
        let origin = TestOrigin()
        origin.set("img", .image(payload(8)))
        try await origin.run { (base) async throws in
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: blocker.appendingPathComponent("cache")))
            let result = await pipeline.setUp()
            guard case let .failure(error) = result else { Issue.record("setUp should report the bad directory"); return }
            #expect(error.description.contains("cache directory"))
            let request = ImageRequest(url: base.appendingPathComponent("images/img"))
            #expect(try await pipeline.image(for: request).data == payload(8))
            #expect(try await pipeline.image(for: request).data == payload(8))
            let stats = await pipeline.stats()
            #expect(!stats.diskAvailable)
            #expect(stats.diskFailures == 1, "counted once: the failed set-up is not tried again")
            #expect(stats.memoryHits == 1 && stats.originFetches == 1)
        }
    }

    @Test func aWriteFailureIsCountedAndTheImageStillLoads() async throws {
        let origin = TestOrigin()
        origin.set("img", .image(payload(8)))
        try await origin.run { (base) async throws in
            let pipeline = pipeline()
            _ = try await pipeline.setUp().get()
            // The directory disappears under the running cache (a full or vanished disk).
            try FileManager.default.removeItem(at: directory.url)
            let request = ImageRequest(url: base.appendingPathComponent("images/img"))
            #expect(try await pipeline.image(for: request).data == payload(8))
            // The answer does not wait for its write; the write's failure is counted once it ran.
            await pipeline.writesSettled()
            #expect(await pipeline.stats().diskFailures == 1)
        }
    }

    @Test func setUpIndexesTenThousandEntries() async throws {
        let writer = DiskStorage(directory: directory.url, synchronizesWrites: false)
        try writer.setUp()
        for key in 0..<10_000 {
            try writer.write(Image(data: payload(key, size: 64), contentType: "image/png"), forKey: "entry-\(key)")
            if key % 500 == 0 { await Task.yield() }
        }
        let reader = DiskStorage(directory: directory.url)
        let report = try reader.setUp()
        #expect(report.entries == 10_000)
        #expect(report.bytes == writer.usage.bytes)
        #expect(try reader.read(forKey: "entry-9876")?.data == payload(9876, size: 64))
    }

    @Test func twoStoragesOnOneDirectorySeeEachOthersEntries() throws {
        let first = DiskStorage(directory: directory.url, synchronizesWrites: false)
        let second = DiskStorage(directory: directory.url, synchronizesWrites: false)
        try first.setUp()
        try second.setUp()
        try first.write(Image(data: payload(1), contentType: "image/png"), forKey: "shared")
        #expect(try second.read(forKey: "shared")?.data == payload(1))
        second.remove(forKey: "shared")
        #expect(try first.read(forKey: "shared") == nil)
    }
}
