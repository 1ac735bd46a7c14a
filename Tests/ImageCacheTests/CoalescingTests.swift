import Foundation
@testable import ImageCache
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(3))) struct CoalescingTests {
    let directory = TemporaryDirectory()

    func pipeline() -> ImagePipeline {
        ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
    }

    @Test func thousandConcurrentCallsForOneKeyMakeOneOriginRequest() async throws {
        let origin = TestOrigin()
        origin.set("one", .image(payload(1)))
        try await origin.run { (base) async throws in
            let pipeline = pipeline()
            let request = ImageRequest(url: base.appendingPathComponent("images/one"))
            let images = try await withThrowingTaskGroup(of: Image.self) { group in
                for _ in 0..<1000 { group.addTask { try await pipeline.image(for: request) } }
                return try await group.reduce(into: [Image]()) { $0.append($1) }
            }
            #expect(images.count == 1000)
            #expect(images.allSatisfy { $0.data == payload(1) })
            #expect(origin.requests("one") == 1)
            let stats = await pipeline.stats()
            #expect(stats.originFetches == 1)
            #expect(stats.coalesced + stats.memoryHits == 999)
        }
    }

    @Test func hundredKeysMakeHundredOriginRequests() async throws {
        let origin = TestOrigin()
        for key in 0..<100 { origin.set("k\(key)", .image(payload(key, size: 2_000))) }
        try await origin.run { (base) async throws in
            let pipeline = pipeline()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for call in 0..<1000 {
                    let request = ImageRequest(url: base.appendingPathComponent("images/k\(call % 100)"))
                    group.addTask {
                        let image = try await pipeline.image(for: request)
                        #expect(image.data == payload(call % 100, size: 2_000))
                    }
                }
                try await group.waitForAll()
            }
            #expect(origin.totalRequests == 100)
            #expect((0..<100).allSatisfy { origin.requests("k\($0)") == 1 })
        }
    }

    /// Loads one after another count nothing they did not do: each first load is one origin
    /// fetch and no memory hit, round after round on fresh pipelines. Before, a leader whose
    /// work had finished before it added its waiter looked in memory and counted a hit.
    @Test func sequentialFirstLoadsCountNoMemoryHit() async throws {
        let origin = TestOrigin()
        for (seed, name) in ["a", "b", "c"].enumerated() { origin.set(name, .image(payload(seed, size: 2_000))) }
        try await origin.run { (base) async throws in
            for round in 0..<40 {
                let pipeline = ImagePipeline()
                for name in ["a", "b", "c"] {
                    _ = try await pipeline.image(for: ImageRequest(url: base.appendingPathComponent("images/\(name)")))
                }
                let stats = await pipeline.stats()
                #expect(stats.memoryHits == 0, "round \(round)")
                #expect(stats.originFetches == 3, "round \(round)")
                #expect(stats.coalesced == 0, "round \(round)")
            }
            #expect(origin.totalRequests == 120)
        }
    }

    @Test func concurrentDiskLookupsReadTheDiskOnce() async throws {
        let origin = TestOrigin()
        origin.set("disk", .image(payload(5)))
        try await origin.run { (base) async throws in
            let request = ImageRequest(url: base.appendingPathComponent("images/disk"))
            _ = try await pipeline().imageStored(for: request)
            #expect(origin.requests("disk") == 1)

            let reopened = pipeline()  // a new process, as far as the cache can tell
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<200 { group.addTask { _ = try await reopened.image(for: request) } }
                try await group.waitForAll()
            }
            let stats = await reopened.stats()
            #expect(stats.diskHits == 1)
            #expect(stats.originFetches == 0)
            #expect(origin.requests("disk") == 1)
        }
    }

    /// A caller whose memory lookup missed (the front door, off the actor) while another call
    /// loads the image and fills memory: when it leads a new flight, the leader looks in memory
    /// again and answers from it, rather than reading the disk a second time.
    @Test func aLeaderWhoseImageArrivedSinceItsMemoryMissAnswersFromMemory() async throws {
        let origin = TestOrigin()
        origin.set("late", .image(payload(4)))
        try await origin.run { (base) async throws in
            let pipeline = pipeline()
            let request = ImageRequest(url: base.appendingPathComponent("images/late"))
            let generation = pipeline.memory.generation  // what the front door reads before it looks
            #expect(pipeline.answerFromMemory(request) == nil, "the front door's miss")
            _ = try await pipeline.image(for: request)  // another request's whole flight, meanwhile
            let before = await pipeline.stats()
            // What the front door does after its miss: the flight, on the actor.
            #expect(pipeline.memory.generation != generation, "memory gained the image: the leader must look again")
            let response = try await pipeline.load(request, stale: nil, lookedAt: generation, as: .init(asker: .fixed(.normal)))
            #expect(response.image.data == payload(4) && response.source == .memory)
            let after = await pipeline.stats()
            #expect(after.memoryHits == before.memoryHits + 1)
            #expect(after.diskHits == before.diskHits)
            #expect(origin.requests("late") == 1)
        }
    }

    @Test func variantsShareOneOriginalFetch() async throws {
        let origin = TestOrigin()
        origin.set("art", .image(payload(9)))
        try await origin.run { (base) async throws in
            let pipeline = pipeline()
            let url = base.appendingPathComponent("images/art")
            let small = ByteReversingProcessor(identifier: "small")
            let large = ByteReversingProcessor(identifier: "large")
            async let a = pipeline.image(for: ImageRequest(url: url, processor: small))
            async let b = pipeline.image(for: ImageRequest(url: url, processor: large))
            async let c = pipeline.image(for: ImageRequest(url: url))
            let (thumb, detail, original) = try await (a, b, c)
            #expect(thumb.data == payload(9).reversed())
            #expect(detail.data == thumb.data)
            #expect(original.data == payload(9))
            #expect(origin.requests("art") == 1)
            #expect(small.callCount == 1 && large.callCount == 1)
            // Each variant and the original are on disk, once written.
            await pipeline.writesSettled()
            #expect(directory.fileNames.filter { $0.count == 64 }.count == 3)
        }
    }
}
