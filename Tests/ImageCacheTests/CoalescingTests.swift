import Foundation
import ImageCache
import Testing
import TestSupport

@Suite struct CoalescingTests {
    let directory = TemporaryDirectory()

    func database() -> ImageDatabase {
        ImageDatabase(configuration: .init(directory: directory.url, synchronizesWrites: false))
    }

    @Test func thousandConcurrentCallsForOneKeyMakeOneOriginRequest() async throws {
        let origin = TestOrigin()
        origin.set("one", .image(payload(1)))
        try await origin.run { (base) async throws in
            let database = database()
            let request = ImageRequest(url: base.appendingPathComponent("images/one"))
            let images = try await withThrowingTaskGroup(of: Image.self) { group in
                for _ in 0..<1000 { group.addTask { try await database.image(request) } }
                return try await group.reduce(into: [Image]()) { $0.append($1) }
            }
            #expect(images.count == 1000)
            #expect(images.allSatisfy { $0.data == payload(1) })
            #expect(origin.requests("one") == 1)
            let stats = database.stats()
            #expect(stats.originFetches == 1)
            #expect(stats.coalesced + stats.memoryHits == 999)
        }
    }

    @Test func hundredKeysMakeHundredOriginRequests() async throws {
        let origin = TestOrigin()
        for key in 0..<100 { origin.set("k\(key)", .image(payload(key, size: 2_000))) }
        try await origin.run { (base) async throws in
            let database = database()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for call in 0..<1000 {
                    let request = ImageRequest(url: base.appendingPathComponent("images/k\(call % 100)"))
                    group.addTask {
                        let image = try await database.image(request)
                        #expect(image.data == payload(call % 100, size: 2_000))
                    }
                }
                try await group.waitForAll()
            }
            #expect(origin.totalRequests == 100)
            #expect((0..<100).allSatisfy { origin.requests("k\($0)") == 1 })
        }
    }

    @Test func concurrentDiskLookupsReadTheDiskOnce() async throws {
        let origin = TestOrigin()
        origin.set("disk", .image(payload(5)))
        try await origin.run { (base) async throws in
            let request = ImageRequest(url: base.appendingPathComponent("images/disk"))
            _ = try await database().image(request)
            #expect(origin.requests("disk") == 1)

            let reopened = database()  // a new process, as far as the cache can tell
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<200 { group.addTask { _ = try await reopened.image(request) } }
                try await group.waitForAll()
            }
            let stats = reopened.stats()
            #expect(stats.diskHits == 1)
            #expect(stats.originFetches == 0)
            #expect(origin.requests("disk") == 1)
        }
    }

    /// A miss handed on (an event loop's `lookInMemory`, then `image(after:)`) while another
    /// call loads the image and fills memory: the new flight's leader sees that memory was
    /// filled since the miss and answers from it, rather than reading the disk a second time.
    @Test func aMissHandedOnAfterAFlightFilledMemoryIsAnsweredFromMemory() async throws {
        let origin = TestOrigin()
        origin.set("late", .image(payload(4)))
        try await origin.run { (base) async throws in
            let database = database()
            let request = ImageRequest(url: base.appendingPathComponent("images/late"))
            guard case let .miss(miss) = database.lookInMemory(request) else {
                Issue.record("an empty memory answered")
                return
            }
            _ = try await database.image(request)  // another request's whole flight, meanwhile
            let before = database.stats()
            #expect(try await database.image(after: miss).data == payload(4))
            let after = database.stats()
            #expect(after.memoryHits == before.memoryHits + 1)
            #expect(after.diskHits == before.diskHits)
            #expect(origin.requests("late") == 1)
        }
    }

    @Test func variantsShareOneOriginalFetch() async throws {
        let origin = TestOrigin()
        origin.set("art", .image(payload(9)))
        try await origin.run { (base) async throws in
            let database = database()
            let url = base.appendingPathComponent("images/art")
            let small = ByteReversingProcessor(identifier: "small")
            let large = ByteReversingProcessor(identifier: "large")
            async let a = database.image(ImageRequest(url: url, processor: small))
            async let b = database.image(ImageRequest(url: url, processor: large))
            async let c = database.image(ImageRequest(url: url))
            let (thumb, detail, original) = try await (a, b, c)
            #expect(thumb.data == payload(9).reversed())
            #expect(detail.data == thumb.data)
            #expect(original.data == payload(9))
            #expect(origin.requests("art") == 1)
            #expect(small.callCount == 1 && large.callCount == 1)
            // Each variant and the original are on disk.
            #expect(directory.fileNames.filter { $0.count == 64 }.count == 3)
        }
    }
}
