import Dispatch
import Foundation
@testable import ImageCache
import Synchronization
import Testing
import TestSupport

/// A processor that blocks the thread it runs on until the test lets each call through, and
/// records the order calls started in: processing held at a known point, the way libvips holds
/// a thread while it works. Blocking is the point: on Swift's cooperative threads it would stall
/// everything else.
final class ThreadHoldingProcessor: ImageProcessing {
    let identifier = "held"
    private let permits = DispatchSemaphore(value: 0)
    private let order = Mutex<[String]>([])
    /// Calls started so far, live.
    let started = LiveValue(0)

    /// The originals processed, in the order their processing started.
    var startOrder: [String] { order.withLock { $0 } }

    /// Lets `count` more calls finish.
    func allow(_ count: Int) {
        for _ in 0..<count { permits.signal() }
    }

    func process(_ image: Image) async throws -> Image {
        order.withLock { $0.append(String(decoding: image.data, as: UTF8.self)) }
        started.update { $0 += 1 }
        waitForPermit()
        return Image(data: image.data.reversed(), contentType: image.contentType)
    }

    private func waitForPermit() { permits.wait() }
}

@Suite(.timeLimit(.minutes(3))) struct SchedulingTests {
    /// Original `n`'s URL; never fetched: the originals are put in memory first.
    static func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1:9/piece-\(n)")! }

    /// A memory-only pipeline holding originals `0..<count`, named by their bytes.
    static func pipeline(count: Int, limits: ImagePipeline.Limits, clock: some Clock<Duration> = ContinuousClock()) async -> ImagePipeline {
        let pipeline = ImagePipeline(configuration: .init(limits: limits), clock: clock)
        for n in 0..<count {
            await pipeline.add(Image(data: Array("piece-\(n)".utf8), contentType: "text/plain"), forKey: url(n).absoluteString)
        }
        return pipeline
    }

    static func request(_ n: Int, _ processor: ThreadHoldingProcessor, _ priority: ImageRequest.Priority) -> ImageRequest {
        ImageRequest(url: url(n), processor: processor, priority: priority)
    }

    /// Returns once the pipeline's scheduling counts satisfy `condition`: every change is
    /// delivered, so nothing is polled.
    @ImageDatabase
    static func until(_ pipeline: ImagePipeline, _ condition: @Sendable @ImageDatabase (SchedulingStats) -> Bool) async {
        for await stats in pipeline.onSchedulingChange where condition(stats) { return }
    }

    @Test func memoryHitsStreamsAndAServerAnswerWhileEveryProcessingThreadIsHeld() async throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let processor = ThreadHoldingProcessor()
        let pipeline = await Self.pipeline(count: cores + 1, limits: .init(processing: cores))
        // As many held processors as Swift has cooperative threads: were processing on them,
        // nothing below could run.
        let held = (0..<cores).map { pipeline.imageTask(with: Self.request($0, processor, .normal)) }
        await reach(processor.started, cores)

        var hits = pipeline.onMemoryAccess.makeAsyncIterator()
        let before = await hits.next()
        let hit = try await pipeline.image(for: ImageRequest(url: Self.url(cores)))
        #expect(hit.data == Array("piece-\(cores)".utf8))
        #expect(await hits.next() == before.map { $0 + 1 })

        let origin = TestOrigin()
        origin.set("live", .image(payload(3)))
        let fetched = try await origin.run { base in
            try await pipeline.image(for: ImageRequest(url: base.appendingPathComponent("images/live")))
        }
        #expect(fetched.data == payload(3))
        #expect(await pipeline.schedulingStats.processing.running == cores)

        processor.allow(cores)
        for task in held { _ = try await task.image }
        #expect(await pipeline.schedulingStats.processing.maxRunning == cores)
    }

    @Test func priorityDecidesWhatStartsNextAndAWaiterCanBeMovedOrLeave() async throws {
        let processor = ThreadHoldingProcessor()
        let pipeline = await Self.pipeline(count: 102, limits: .init(processing: 1))
        let first = pipeline.imageTask(with: Self.request(0, processor, .low))
        await reach(processor.started, 1)
        // Pieces 1 and 2 queued first, in that order (tasks started together may queue in any
        // order), then the 98 others: equals start in the order they queued.
        var lows: [ImageTask] = []
        for piece in 1...2 {
            lows.append(pipeline.imageTask(with: Self.request(piece, processor, .low)))
            await Self.until(pipeline) { $0.processing.queued == piece }
        }
        lows += (3...100).map { pipeline.imageTask(with: Self.request($0, processor, .low)) }
        await Self.until(pipeline) { $0.processing.queued == 100 }
        let urgent = pipeline.imageTask(with: Self.request(101, processor, .veryHigh))
        await Self.until(pipeline) { $0.processing.queued == 101 }

        // A very high request queued after a hundred low ones is the next to start.
        processor.allow(1)
        await reach(processor.started, 2)
        #expect(processor.startOrder == ["piece-0", "piece-101"])

        // Raising a waiting request's priority moves it to the front.
        lows[49].priority = .high
        processor.allow(1)
        await reach(processor.started, 3)
        #expect(processor.startOrder.last == "piece-50")

        // A cancelled waiter leaves its queue at once and its work never starts.
        lows[59].cancel()
        await #expect(throws: CancellationError.self) { try await lows[59].image }
        await Self.until(pipeline) { $0.processing.queued == 98 }

        processor.allow(200)
        for (index, task) in lows.enumerated() where index != 59 { _ = try await task.image }
        _ = try await first.image
        _ = try await urgent.image
        #expect(!processor.startOrder.contains("piece-60"))
        #expect(processor.startOrder.count == 101)
        #expect(processor.startOrder.prefix(5) == ["piece-0", "piece-101", "piece-50", "piece-1", "piece-2"])
        let stats = await pipeline.schedulingStats.processing
        #expect(stats.maxRunning == 1 && stats.maxQueued == 101 && stats.queued == 0 && stats.running == 0)
    }

    /// One processing slot, held by a shown image (piece 0), and 50 prefetches queued behind it.
    static func prefetchingBehindOneShownImage() async -> (ThreadHoldingProcessor, ImagePipeline, ImageTask, ImagePrefetcher) {
        let processor = ThreadHoldingProcessor()
        let pipeline = await Self.pipeline(count: 51, limits: .init(processing: 1))
        let shown = pipeline.imageTask(with: Self.request(0, processor, .high))
        await reach(processor.started, 1)
        let prefetcher = ImagePrefetcher(pipeline: pipeline, destination: .memoryCache)
        await prefetcher.startPrefetching(with: (1...50).map { Self.request($0, processor, .normal) })
        await Self.until(pipeline) { $0.processing.queued == 50 }
        return (processor, pipeline, shown, prefetcher)
    }

    @Test func stoppingAPrefetchCancelsWhatHasNotStarted() async throws {
        let (processor, pipeline, shown, prefetcher) = await Self.prefetchingBehindOneShownImage()
        #expect(await prefetcher.count == 50)

        await prefetcher.stopPrefetching()
        await Self.until(pipeline) { $0.processing.queued == 0 }
        processor.allow(1)
        _ = try await shown.image
        #expect(processor.startOrder == ["piece-0"])
        #expect(await pipeline.schedulingStats.processing.started == 1)
    }

    @Test func aRequestForAKeyBeingPrefetchedJoinsItsWorkAtItsOwnPriority() async throws {
        let (processor, pipeline, shown, prefetcher) = await Self.prefetchingBehindOneShownImage()

        // Somebody opens piece 30 while it waits to be prefetched.
        let opened = pipeline.imageTask(with: Self.request(30, processor, .high))
        let key = Self.request(30, processor, .high).cacheKey
        await Self.until(pipeline) { _ in pipeline.machine.flight(forKey: key)?.priority == .high }
        #expect(await pipeline.schedulingStats.processing.queued == 50, "joined, not queued again")

        processor.allow(1)
        await reach(processor.started, 2)
        #expect(processor.startOrder == ["piece-0", "piece-30"])
        processor.allow(1)
        #expect(try await opened.image.data == Array("piece-30".utf8).reversed())
        await prefetcher.stopPrefetching()
        processor.allow(100)
        _ = try await shown.image
        #expect(processor.startOrder.filter { $0 == "piece-30" }.count == 1)
        // Prefetches never count as hits, nor does a variant's look-up of its original in memory:
        // no caller was answered from memory.
        #expect(pipeline.memory.hits.value == 0)
        #expect(await pipeline.stats().coalesced == 1, "the opened request joined the prefetch")
    }

    @Test func aFullQueueRefusesAPrefetchAndGivesInteractiveWorkADeadline() async throws {
        let clock = ManualClock()
        let processor = ThreadHoldingProcessor()
        let pipeline = await Self.pipeline(
            count: 6, limits: .init(processing: 1, queueCapacity: 2, interactiveDeadline: .seconds(10)), clock: clock
        )
        let running = pipeline.imageTask(with: Self.request(0, processor, .normal))
        await reach(processor.started, 1)
        let queued = (1...2).map { pipeline.imageTask(with: Self.request($0, processor, .normal)) }
        await Self.until(pipeline) { $0.processing.queued == 2 }

        let prefetch = pipeline.imageTask(with: Self.request(3, processor, .low))
        await #expect(throws: ImagePipeline.Error.tooBusy(stage: "processing", waited: nil)) { try await prefetch.image }

        let interactive = pipeline.imageTask(with: Self.request(4, processor, .normal))
        await Self.until(pipeline) { $0.processing.queued == 3 }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(10))
        await #expect(throws: ImagePipeline.Error.tooBusy(stage: "processing", waited: .seconds(10))) {
            try await interactive.image
        }
        #expect("\(ImagePipeline.Error.tooBusy(stage: "processing", waited: .seconds(10)))".contains("try again"))

        // Neither failure is remembered: asked again with room, both load.
        processor.allow(100)
        _ = try await running.image
        for task in queued { _ = try await task.image }
        #expect(try await pipeline.image(for: Self.request(3, processor, .low)).data == Array("piece-3".utf8).reversed())
        let stats = await pipeline.schedulingStats.processing
        #expect(stats.refused == 1 && stats.timedOut == 1)
    }

    /// The prefetcher keeps no queue of its own: its work waits in the stages' queues at its
    /// priority, within background work's share of the processors (one fewer than the slots),
    /// so what somebody waits for starts at once on the slot left to it, whenever it came; a
    /// waiting prefetch can be stopped, and the others start first in, first out.
    @Test func prefetchesWaitInTheStagesQueuesBehindWorkSomebodyWaitsFor() async throws {
        let processor = ThreadHoldingProcessor()
        let pipeline = await Self.pipeline(count: 6, limits: .init(processing: 2))
        let prefetcher = ImagePrefetcher(pipeline: pipeline, destination: .memoryCache)
        let requests = (1...5).map { Self.request($0, processor, .normal) }
        // One at a time, so that equals queue in a known order.
        for (index, request) in requests.enumerated() {
            await prefetcher.startPrefetching(with: [request])
            if index < 1 {
                await reach(processor.started, index + 1)
            } else {
                await Self.until(pipeline) { $0.processing.queued == index }
            }
        }
        // One runs, four wait in the pipeline's queue: the prefetcher holds none back, and the
        // second processor is left free.
        #expect(await prefetcher.count == 5)
        #expect(await pipeline.schedulingStats.processing.queued == 4)
        #expect(await pipeline.schedulingStats.processing.running == 1)
        #expect(processor.startOrder == ["piece-1"])

        let shown = pipeline.imageTask(with: Self.request(0, processor, .high))
        await reach(processor.started, 2)
        #expect(processor.startOrder.last == "piece-0", "the shown image starts at once, before the prefetches queued earlier")
        // A waiting prefetch can be stopped: it leaves the queue.
        await prefetcher.stopPrefetching(with: [requests[3]])
        #expect(await prefetcher.count == 4)
        await Self.until(pipeline) { $0.processing.queued == 3 }

        processor.allow(10)
        _ = try await shown.image
        #expect(await prefetcher.prefetch([requests[0], requests[1], requests[2], requests[4]]) == 4)
        #expect(processor.startOrder.suffix(3) == ["piece-2", "piece-3", "piece-5"])
        #expect(!processor.startOrder.contains("piece-4"))
        let stats = await pipeline.schedulingStats.processing
        #expect(stats.started == 5 && stats.maxRunning == 2 && stats.maxBackgroundRunning == 1,
                "four prefetches one at a time, and the shown image beside them")
    }

    /// Somebody asks for an image a prefetch queued behind background work's share of the
    /// processors: its flight is theirs now, and it starts at once on the processor left free.
    @Test func aPrefetchSomebodyAsksForStartsAtOnce() async throws {
        let processor = ThreadHoldingProcessor()
        let pipeline = await Self.pipeline(count: 3, limits: .init(processing: 2))
        let prefetcher = ImagePrefetcher(pipeline: pipeline, destination: .memoryCache)
        await prefetcher.startPrefetching(with: [Self.request(1, processor, .normal)])
        await reach(processor.started, 1)
        await prefetcher.startPrefetching(with: [Self.request(2, processor, .normal)])
        await Self.until(pipeline) { $0.processing.queued == 1 }
        #expect(await pipeline.schedulingStats.processing.running == 1, "the second processor is kept from background work")
        let shown = pipeline.imageTask(with: Self.request(2, processor, .high))
        await reach(processor.started, 2)
        #expect(processor.startOrder == ["piece-1", "piece-2"])
        processor.allow(10)
        _ = try await shown.image
    }

    /// An awaited prefetch returns once its images are where the prefetcher keeps them: on disk
    /// (and not in memory, which is left to what is shown) for `.diskCache`, in memory for
    /// `.memoryCache`. Prefetching what is held asks nothing and counts no hit.
    @Test func anAwaitedPrefetchReturnsOnceItsImagesAreHeld() async throws {
        let origin = TestOrigin()
        for n in 0..<4 { origin.set("p\(n)", .image(payload(n))) }
        let directory = TemporaryDirectory()
        try await origin.run { (base) async throws in
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url))
            let requests = (0..<4).map { ImageRequest(url: base.appendingPathComponent("images/p\($0)")) }
            let toDisk = ImagePrefetcher(pipeline: pipeline)
            #expect(await toDisk.prefetch(Array(requests[0..<2])) == 2)
            let disk = try #require(pipeline.disk)
            for n in 0..<2 {
                #expect(disk.contains(key: requests[n].cacheKey), "on disk once the prefetch returned")
                #expect(try disk.read(forKey: requests[n].cacheKey)?.data == payload(n))
                #expect(pipeline.memory.peek(requests[n].cacheKey) == nil, "memory is left to what is shown")
            }
            let toMemory = ImagePrefetcher(pipeline: pipeline, destination: .memoryCache)
            #expect(await toMemory.prefetch(Array(requests[2..<4])) == 2)
            for request in requests[2..<4] { #expect(pipeline.memory.peek(request.cacheKey) != nil, "in memory once the prefetch returned") }

            #expect(await toDisk.prefetch(requests) == 4)
            #expect(origin.totalRequests == 4)
            #expect(await pipeline.stats().memoryHits == 0, "prefetches count no hits")
        }
    }
}
