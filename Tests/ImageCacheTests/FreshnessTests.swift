import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCaching
import ImageCache
import Testing
import TestSupport

/// HTTP freshness end to end: a real origin on 127.0.0.1, a real directory, and a wall clock
/// the test moves. The origin sends `max-age=60` and an ETag unless a test says otherwise.
@Suite(.timeLimit(.minutes(3))) struct FreshnessTests {
    let directory = TemporaryDirectory()
    /// Ten days behind the origin's own clock (its `Date` is the real time), as a client's clock
    /// may be: the age then comes from the time the entry spends in the cache, which the test
    /// moves, and never from the origin's `Date`.
    let clock = TestWallClock(Date().addingTimeInterval(-10 * 86_400))

    /// A pipeline over the test's directory: a new one is a restart.
    func pipeline() -> ImagePipeline {
        ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false), now: clock.now)
    }

    func withOrigin(_ cacheControl: String? = "max-age=60", _ body: (TestOrigin, URL) async throws -> Void) async throws {
        let origin = TestOrigin()
        origin.setCacheControl(cacheControl)
        origin.set("a", .image(payload(1)))
        try await origin.run { base in try await body(origin, base.appendingPathComponent("images/a")) }
    }

    @Test func aFreshEntryCostsNoRequestAcrossARestart() async throws {
        try await withOrigin { origin, url in
            _ = try await pipeline().imageStored(for: ImageRequest(url: url))
            clock.advance(by: 59)
            let restarted = pipeline()
            #expect(try await restarted.image(for: ImageRequest(url: url)).data == payload(1))
            #expect(origin.requests("a") == 1)
            #expect(await restarted.stats().diskHits == 1)
        }
    }

    @Test func aStaleEntryIsRevalidatedAndA304KeepsItsBytes() async throws {
        try await withOrigin { origin, url in
            let first = try await pipeline().imageStored(for: ImageRequest(url: url))
            #expect(first.cacheHeaders?.etag == TestOrigin.etag(payload(1)))
            clock.advance(by: 61)
            let restarted = pipeline()
            let again = try await restarted.imageStored(for: ImageRequest(url: url))
            #expect(again.data == payload(1))
            #expect(origin.requests("a") == 2 && origin.notModified("a") == 1)
            let stats = await restarted.stats()
            #expect(stats.revalidations == 1 && stats.refreshed == 0 && stats.originFetches == 1)
            // The 304 made it fresh again, on disk too: the next restart asks nothing.
            clock.advance(by: 30)
            _ = try await pipeline().image(for: ImageRequest(url: url))
            #expect(origin.requests("a") == 2)
        }
    }

    /// A server's event loop asks memory alone (`answerFromMemory(_:)`) and, on a miss, hands the
    /// request on to `image(for:)`: when the entry was stale and another request refreshed it in
    /// between, the handed-on request takes the fresh entry and does not revalidate again.
    @Test func aStaleMissHandedOnTakesAnEntryRefreshedInBetween() async throws {
        try await withOrigin { origin, url in
            let pipeline = pipeline()
            _ = try await pipeline.image(for: ImageRequest(url: url))
            clock.advance(by: 61)
            #expect(pipeline.answerFromMemory(ImageRequest(url: url)) == nil, "a stale entry is a miss")
            _ = try await pipeline.image(for: ImageRequest(url: url))  // another request revalidates: 304
            #expect(origin.requests("a") == 2 && origin.notModified("a") == 1)
            #expect(try await pipeline.image(for: ImageRequest(url: url)).data == payload(1))
            #expect(origin.requests("a") == 2, "the refreshed entry answered: no second revalidation")
            #expect(await pipeline.stats().revalidations == 1)
        }
    }

    /// A miss of a key memory did not hold, handed on: loaded as a lookup would, and then a
    /// memory hit, counted once.
    @Test func aMissHandedOnLoadsAsALookupWould() async throws {
        try await withOrigin { (origin, url) async throws in
            let pipeline = pipeline()
            #expect(pipeline.answerFromMemory(ImageRequest(url: url)) == nil, "nothing is in memory yet")
            #expect(try await pipeline.image(for: ImageRequest(url: url)).data == payload(1))
            #expect(origin.requests("a") == 1)
            #expect(pipeline.answerFromMemory(ImageRequest(url: url))?.data == payload(1), "the loaded image is in memory")
            #expect(await pipeline.stats().memoryHits == 1)
        }
    }

    @Test func concurrentRequestsForAStaleKeyCauseOneRevalidation() async throws {
        try await withOrigin { origin, url in
            let pipeline = pipeline()
            _ = try await pipeline.image(for: ImageRequest(url: url))
            clock.advance(by: 120)
            try await withThrowingTaskGroup(of: Image.self) { group in
                for _ in 0..<20 { group.addTask { try await pipeline.image(for: ImageRequest(url: url)) } }
                for try await image in group { #expect(image.data == payload(1)) }
            }
            #expect(origin.notModified("a") == 1)
            #expect(origin.requests("a") == 2)
        }
    }

    @Test func changedBytesReplaceTheEntryAndItsVariantIsRemadeOnce() async throws {
        try await withOrigin { origin, url in
            let reverse = ByteReversingProcessor()
            let pipeline = pipeline()
            let thumbnail = ImageRequest(url: url, processor: reverse)
            let made = try await pipeline.image(for: thumbnail)
            #expect(made.data == Array(payload(1).reversed()))
            origin.set("a", .image(payload(2)))
            clock.advance(by: 61)
            // The variant is stale with its original: the original is revalidated, gets new
            // bytes, and the variant is made again from them, once.
            let remade = try await pipeline.imageStored(for: thumbnail)
            #expect(remade.data == Array(payload(2).reversed()))
            #expect(try await self.pipeline().image(for: thumbnail).data == Array(payload(2).reversed()))
            #expect(reverse.callCount == 2)
            #expect(origin.requests("a") == 2 && origin.notModified("a") == 0)
            #expect(await pipeline.stats().refreshed == 1)
        }
    }

    @Test func aVariantOfOtherBytesThanTheFeedListsIsNeverAnswered() async throws {
        try await withOrigin { origin, url in
            let reverse = ByteReversingProcessor()
            let pipeline = pipeline()
            _ = try await pipeline.imageStored(for: ImageRequest(url: url, processor: reverse, expectedSHA256: SHA256Hex.digest(payload(1))))
            // A revision: new bytes, a new checksum in the feed; the entries are still fresh.
            origin.set("a", .image(payload(2)))
            let revised = ImageRequest(url: url, processor: reverse, expectedSHA256: SHA256Hex.digest(payload(2)))
            #expect(try await self.pipeline().image(for: revised).data == Array(payload(2).reversed()))
            #expect(reverse.callCount == 2)
            #expect(origin.requests("a") == 2)
        }
    }

    @Test func staleWhileRevalidateAnswersAtOnceAndRefreshesOnce() async throws {
        try await withOrigin("max-age=60, stale-while-revalidate=600") { origin, url in
            let pipeline = pipeline()
            _ = try await pipeline.image(for: ImageRequest(url: url))
            // The origin now has new bytes and holds every answer until the test lets it go.
            let gate = Gate()
            origin.set("a", .held(gate, payload(2)))
            clock.advance(by: 90)
            for _ in 0..<5 {
                // Answered while the origin holds: the stale entry, without waiting.
                #expect(try await pipeline.image(for: ImageRequest(url: url)).data == payload(1))
            }
            gate.open()
            for await refreshed in pipeline.onRefresh where refreshed >= 1 { break }
            #expect(origin.requests("a") == 2, "one refresh for five stale answers")
            #expect(try await pipeline.image(for: ImageRequest(url: url)).data == payload(2))
            let stats = await pipeline.stats()
            #expect(stats.staleAnswers == 5 && stats.refreshed == 1)
        }
    }

    @Test func staleIfErrorAnswersStaleOnA5xxOnlyInsideItsWindow() async throws {
        try await withOrigin("max-age=60, stale-if-error=600") { origin, url in
            let pipeline = pipeline()
            _ = try await pipeline.imageStored(for: ImageRequest(url: url))
            origin.set("a", .status(503))
            clock.advance(by: 120)
            #expect(try await pipeline.image(for: ImageRequest(url: url)).data == payload(1))
            #expect(await pipeline.stats().staleAnswers == 1)
            clock.advance(by: 1_000)
            await #expect(throws: ImagePipeline.Error.httpStatus(503, url: url.absoluteString)) {
                try await self.pipeline().image(for: ImageRequest(url: url))
            }
        }
    }

    @Test func anUnreachableOriginServesStaleUnlessMustRevalidate() async throws {
        var urls: [URL] = []
        try await withOrigin { _, url in
            urls.append(url)
            _ = try await pipeline().imageStored(for: ImageRequest(url: url))
        }
        clock.advance(by: 86_400)
        // The origin is gone: its port refuses connections.
        #expect(try await pipeline().image(for: ImageRequest(url: urls[0])).data == payload(1))

        let strict = TemporaryDirectory()
        func strictPipeline() -> ImagePipeline {
            ImagePipeline(configuration: .init(diskDirectory: strict.url, synchronizesWrites: false), now: clock.now)
        }
        try await withOrigin("max-age=60, must-revalidate") { _, url in
            urls.append(url)
            _ = try await strictPipeline().imageStored(for: ImageRequest(url: url))
        }
        clock.advance(by: 120)
        await #expect(throws: ImagePipeline.Error.self) { try await strictPipeline().image(for: ImageRequest(url: urls[1])) }
    }

    @Test func noStoreAnswersAreNeverWrittenToDisk() async throws {
        try await withOrigin("no-store") { origin, url in
            let pipeline = pipeline()
            for _ in 0..<2 {
                let image = try await pipeline.image(for: ImageRequest(url: url))
                #expect(image.data == payload(1))
            }
            await pipeline.writesSettled()  // a write would be under way now, were there one
            #expect(origin.requests("a") == 2)
            #expect(directory.fileNames.filter { $0.count == 64 }.isEmpty)
            #expect(await pipeline.stats().diskEntries == 0)
        }
    }

    @Test func cachePoliciesChooseBetweenCacheAndOrigin() async throws {
        try await withOrigin { origin, url in
            let pipeline = pipeline()
            // Offline, a miss is an error that names the URL, and nothing is sent.
            await #expect(throws: ImagePipeline.Error.notCached(url: url.absoluteString)) {
                try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
            }
            #expect(origin.requests("a") == 0)
            _ = try await pipeline.imageStored(for: ImageRequest(url: url))
            clock.advance(by: 3_600)
            // Stale, yet answered without a request by both cache-first policies.
            _ = try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
            _ = try await self.pipeline().image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataElseLoad))
            #expect(origin.requests("a") == 1)
            // A reload ignores the cache: unconditional.
            _ = try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .reloadIgnoringCacheData))
            #expect(origin.requests("a") == 2 && origin.notModified("a") == 0)
            // Revalidating asks even about a fresh entry.
            _ = try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .reloadRevalidatingCacheData))
            #expect(origin.requests("a") == 3 && origin.notModified("a") == 1)
            // The URLRequest's own policy is honoured.
            var urlRequest = URLRequest(url: url)
            urlRequest.cachePolicy = .returnCacheDataDontLoad
            clock.advance(by: 3_600)
            _ = try await pipeline.fetch(urlRequest)
            #expect(origin.requests("a") == 3)
            #expect(try ImageRequest(urlRequest).cachePolicy == .returnCacheDataDontLoad)
        }
    }

    @Test func aFreshImmutableEntryIsNotRevalidatedEvenOnRequest() async throws {
        try await withOrigin("max-age=600, immutable") { origin, url in
            let pipeline = pipeline()
            _ = try await pipeline.image(for: ImageRequest(url: url))
            _ = try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .reloadRevalidatingCacheData))
            #expect(origin.requests("a") == 1)
        }
    }

    @Test func anOriginWithoutFreshnessIsAskedEveryTime() async throws {
        try await withOrigin(nil) { origin, url in
            let pipeline = pipeline()
            for _ in 0..<3 { _ = try await pipeline.image(for: ImageRequest(url: url)) }
            #expect(origin.requests("a") == 3 && origin.notModified("a") == 2)
        }
    }
}
