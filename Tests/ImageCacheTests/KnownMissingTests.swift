import Foundation
import HTTPCaching
@testable import ImageCache
import Testing
import TestSupport

/// Negative caching against a real origin on 127.0.0.1 and a real directory: a 404 with a
/// lifetime is remembered on disk (a later process knows without asking), answered offline and
/// while the origin is down; one without a lifetime is not stored. The origin counters add up.
@Suite(.timeLimit(.minutes(3))) struct KnownMissingTests {
    let directory = TemporaryDirectory()
    let clock = TestWallClock(Date().addingTimeInterval(-10 * 86_400))

    /// A pipeline over the test's directory: a new one is a restart.
    func pipeline() -> ImagePipeline {
        ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false), now: clock.now)
    }

    func isStatus(_ status: Int) -> @Sendable (any Error) -> Bool {
        { error in
            if case let ImagePipeline.Error.httpStatus(code, _) = error { return code == status }
            return false
        }
    }

    @Test func a404WithALifetimeIsRememberedOnDiskAcrossARestart() async throws {
        let origin = TestOrigin()
        origin.set("gone", .statusWithCacheControl(404, "public, max-age=60"))
        try await origin.run { base in
            let url = base.appendingPathComponent("images/gone")
            await #expect(performing: { try await pipeline().image(for: ImageRequest(url: url)) }, throws: isStatus(404))
            #expect(origin.requests("gone") == 1)

            let restarted = pipeline()
            await #expect(performing: { try await restarted.image(for: ImageRequest(url: url)) }, throws: isStatus(404))
            #expect(origin.requests("gone") == 1, "answered from the stored 404, not asked again")
            let offline = pipeline()
            await #expect(
                performing: { try await offline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad)) },
                throws: isStatus(404)
            )
            #expect(await restarted.stats().knownMissing == 1)
            #expect(await offline.stats().knownMissing == 1)

            clock.advance(by: 61)  // the 404 is stale: asked again
            await #expect(performing: { try await pipeline().image(for: ImageRequest(url: url)) }, throws: isStatus(404))
            #expect(origin.requests("gone") == 2)

            // Once the origin has it, the image replaces the known-missing entry.
            origin.set("gone", .image(payload(1, size: 11)))
            let reloading = pipeline()
            await reloading.setUp()
            let found = try await reloading.imageStored(for: ImageRequest(url: url, cachePolicy: .reloadIgnoringCacheData))
            #expect(found.data == payload(1, size: 11))
            #expect(try await pipeline().image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad)).data == payload(1, size: 11))
        }
    }

    /// A 404 is nobody's signed word: one seen while the feed expected some bytes does not answer
    /// for a later edition that expects others (asked again, and the image loads), and whatever
    /// lifetime its headers claim, it is believed for a day at most.
    @Test func aStored404AnswersOnlyTheBytesItWasAskedForAndForADayAtMost() async throws {
        let origin = TestOrigin()
        // As an attacker on the path for one moment would answer: missing for 63 years.
        origin.set("hidden", .statusWithCacheControl(404, "public, max-age=2000000000"))
        origin.set("held", .statusWithCacheControl(404, "public, max-age=2000000000"))
        origin.set("long", .statusWithCacheControl(404, "public, max-age=2000000000"))
        try await origin.run { (base) async throws in
            let hidden = base.appendingPathComponent("images/hidden")
            let old = ImageRequest(url: hidden, expectedSHA256: SHA256Hex.digest([9, 9, 9]))
            await #expect(performing: { try await pipeline().image(for: old) }, throws: isStatus(404))
            await #expect(performing: { try await pipeline().image(for: old) }, throws: isStatus(404))
            #expect(origin.requests("hidden") == 1, "the same edition: answered from the stored 404")

            // The next edition lists new bytes for the piece: the stored 404 is not about them.
            let new = ImageRequest(url: hidden, expectedSHA256: SHA256Hex.digest(payload(2, size: 11)))
            let offline = ImageRequest(url: hidden, expectedSHA256: new.expectedSHA256, cachePolicy: .returnCacheDataDontLoad)
            await #expect(performing: { try await pipeline().image(for: offline) }, throws: { error in
                if case ImagePipeline.Error.notCached = error { return true }
                return false
            })
            origin.set("hidden", .image(payload(2, size: 11)))
            #expect(try await pipeline().image(for: new).data == payload(2, size: 11))
            #expect(origin.requests("hidden") == 2)

            // The same edition, a day later: asked again, however long the 404 said it lasts.
            let held = ImageRequest(url: base.appendingPathComponent("images/held"), expectedSHA256: SHA256Hex.digest([4]))
            await #expect(performing: { try await pipeline().image(for: held) }, throws: isStatus(404))
            clock.advance(by: 86_399)
            await #expect(performing: { try await pipeline().image(for: held) }, throws: isStatus(404))
            #expect(origin.requests("held") == 1)
            clock.advance(by: 1)
            await #expect(performing: { try await pipeline().image(for: held) }, throws: isStatus(404))
            #expect(origin.requests("held") == 2)

            // An expectation that is no digest (too long to keep) is refused before the origin is
            // asked, and nothing is stored for it: a request that expects nothing asks.
            let long = base.appendingPathComponent("images/long")
            await #expect(throws: ImagePipeline.Error.invalidDigest(String(repeating: "a", count: 200))) {
                try await pipeline().image(for: ImageRequest(url: long, expectedSHA256: String(repeating: "a", count: 200)))
            }
            #expect(origin.requests("long") == 0)
            await #expect(performing: { try await pipeline().image(for: ImageRequest(url: long)) }, throws: isStatus(404))
            #expect(origin.requests("long") == 1)
        }
    }

    /// In one process too: a 404 remembered in memory (five minutes) does not answer a request
    /// that expects other bytes; one that expects the same bytes, or none, it answers.
    @Test func a404RememberedInMemoryAnswersOnlyTheBytesItWasAskedFor() async throws {
        let origin = TestOrigin()
        origin.set("later", .status(404))
        try await origin.run { (base) async throws in
            let pipeline = pipeline()
            let url = base.appendingPathComponent("images/later")
            let old = ImageRequest(url: url, expectedSHA256: SHA256Hex.digest([7]))
            await #expect(performing: { try await pipeline.image(for: old) }, throws: isStatus(404))
            await #expect(performing: { try await pipeline.image(for: old) }, throws: isStatus(404))
            #expect(origin.requests("later") == 1, "remembered for the same bytes")
            origin.set("later", .image(payload(3, size: 10)))
            let new = ImageRequest(url: url, expectedSHA256: SHA256Hex.digest(payload(3, size: 10)))
            #expect(try await pipeline.image(for: new).data == payload(3, size: 10))
            #expect(origin.requests("later") == 2)
        }
    }

    /// Without a lifetime the 404 is not stored (today's five-minute memory in one process still
    /// applies): a restart asks again, and offline it is not cached.
    @Test func a404WithoutALifetimeIsNotStored() async throws {
        let origin = TestOrigin()
        origin.set("gone", .status(404))
        try await origin.run { base in
            let url = base.appendingPathComponent("images/gone")
            let first = pipeline()
            await #expect(performing: { try await first.image(for: ImageRequest(url: url)) }, throws: isStatus(404))
            await #expect(performing: { try await first.image(for: ImageRequest(url: url)) }, throws: isStatus(404))
            #expect(origin.requests("gone") == 1, "remembered in memory")
            await #expect(performing: { try await pipeline().image(for: ImageRequest(url: url)) }, throws: isStatus(404))
            #expect(origin.requests("gone") == 2)
            await #expect(throws: ImagePipeline.Error.notCached(url: url.absoluteString)) {
                try await pipeline().image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad))
            }
        }
    }

    /// A stale 404 and an origin that no longer answers: still missing, not a connection failure.
    @Test func aStaleKnownMissingPieceIsStillMissingWhenTheOriginIsDown() async throws {
        let origin = TestOrigin()
        origin.set("gone", .statusWithCacheControl(404, "public, max-age=60"))
        let url = try await origin.run { base in
            let url = base.appendingPathComponent("images/gone")
            await #expect(performing: { try await pipeline().image(for: ImageRequest(url: url)) }, throws: isStatus(404))
            return url
        }
        clock.advance(by: 3_600)
        let down = pipeline()
        await #expect(performing: { try await down.image(for: ImageRequest(url: url)) }, throws: isStatus(404))
        let stats = await down.stats()
        #expect(stats.originFetches == 1 && stats.unanswered == 1 && stats.knownMissing == 1)
        #expect(stats.downloads == 0 && stats.missingAnswers == 0)
    }

    /// Every request sent ends as exactly one kind of answer, or none.
    @Test func originCountersAddUp() async throws {
        let origin = TestOrigin()
        origin.set("a", .image(payload(4, size: 11)))
        origin.set("b", .statusWithCacheControl(404, "max-age=60"))
        origin.set("c", .status(410))
        origin.set("d", .status(503))
        origin.set("e", .status(403))
        let pipeline = pipeline()
        let urls = try await origin.run { base in
            for name in ["a", "b", "c", "d", "e"] {
                _ = try? await pipeline.image(for: ImageRequest(url: base.appendingPathComponent("images/\(name)")))
            }
            clock.advance(by: 3_600)
            // A stale "a": one conditional request, answered 304.
            _ = try await pipeline.image(for: ImageRequest(url: base.appendingPathComponent("images/a")))
            return base
        }
        // The origin is gone: one request with no answer.
        _ = try? await pipeline.image(for: ImageRequest(url: urls.appendingPathComponent("images/f")))
        let stats = await pipeline.stats()
        #expect(stats.downloads == 1)
        #expect(stats.revalidations == 1)
        #expect(stats.missingAnswers == 2, "404 and 410")
        #expect(stats.errorAnswers == 2, "503 and 403")
        #expect(stats.unanswered == 1)
        #expect(stats.originFetches == 7)
        #expect(stats.downloads + stats.revalidations + stats.missingAnswers + stats.errorAnswers + stats.unanswered == stats.originFetches)
    }

    /// A known-missing entry is format version 3, so an older build (version 2 only) drops it
    /// instead of answering an empty image; images stay version 2, which older builds read.
    @Test func knownMissingEntriesAreVersion3AndImagesStayVersion2() throws {
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        let headers = CacheHeaders(fields: [("Cache-Control", "max-age=60")], requestTime: at, responseTime: at)
        let missing = DiskEntry.encodeMissing(status: 410, cacheHeaders: headers, key: "k")
        #expect(missing[4] == 3)
        #expect(DiskEntry.decodeEntry(missing, key: "k") == .success(.missing(status: 410, cacheHeaders: headers, expectedSHA256: nil)))
        #expect(DiskEntry.decode(missing, key: "k") == .failure(.notAnImage(status: 410)))
        // The bytes the request expected go with it (tag 6); a longer form than a digest's is not kept.
        let expected = SHA256Hex.digest([1])
        let withExpected = DiskEntry.encodeMissing(status: 404, cacheHeaders: headers, expectedSHA256: expected, key: "k")
        #expect(DiskEntry.decodeEntry(withExpected, key: "k") == .success(.missing(status: 404, cacheHeaders: headers, expectedSHA256: expected)))
        let long = String(repeating: "a", count: DiskEntry.expectedSHA256Limit + 1)
        let withLong = DiskEntry.encodeMissing(status: 404, cacheHeaders: nil, expectedSHA256: long, key: "k")
        #expect(DiskEntry.decodeEntry(withLong, key: "k") == .success(.missing(status: 404, cacheHeaders: nil, expectedSHA256: nil)))
        #expect(DiskEntry.encode(Image(data: [1], contentType: "image/png"), key: "k")[4] == 2)
        // A status record means nothing in a version 2 entry, and a version 3 entry needs one.
        var relabelled = DiskEntry.encode(Image(data: [1], contentType: "image/png"), key: "k")
        relabelled[4] = 3
        DiskEntryMutationTests.reseal(&relabelled)
        #expect(DiskEntry.decodeEntry(relabelled, key: "k") == .failure(.badMetadata("a version 3 entry without a status")))
    }
}
