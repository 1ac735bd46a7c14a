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

    /// A memory-only loader holding originals `0..<count`, named by their bytes.
    static func loader(count: Int, limits: ImageLoader.Limits, clock: some Clock<Duration> = ContinuousClock()) async -> ImageLoader {
        let loader = ImageLoader(configuration: .init(limits: limits), clock: clock)
        for n in 0..<count {
            loader.add(Image(data: Array("piece-\(n)".utf8), contentType: "text/plain"), forKey: url(n).absoluteString)
        }
        return loader
    }

    static func request(_ n: Int, _ processor: ThreadHoldingProcessor, _ priority: ImageRequest.Priority) -> ImageRequest {
        ImageRequest(url: url(n), processor: processor, priority: priority)
    }

    /// Returns once the loader's scheduling counts satisfy `condition`: every change is
    /// delivered, so nothing is polled.
    static func until(_ loader: ImageLoader, _ condition: (SchedulingStats) -> Bool) async {
        for await stats in loader.onSchedulingChange where condition(stats) { return }
    }

    @Test func memoryHitsStreamsAndAServerAnswerWhileEveryProcessingThreadIsHeld() async throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let processor = ThreadHoldingProcessor()
        let loader = await Self.loader(count: cores + 1, limits: .init(processing: cores))
        // As many held processors as Swift has cooperative threads: were processing on them,
        // nothing below could run.
        let held = (0..<cores).map { loader.imageTask(with: Self.request($0, processor, .normal)) }
        await reach(processor.started, cores)

        var hits = loader.inMemoryAccess.makeAsyncIterator()
        let before = await hits.next()
        let hit = try await loader.image(for: ImageRequest(url: Self.url(cores)))
        #expect(hit.data == Array("piece-\(cores)".utf8))
        #expect(await hits.next() == before.map { $0 + 1 })

        let origin = TestOrigin()
        origin.set("live", .image(payload(3)))
        let fetched = try await origin.run { base in
            try await loader.image(for: ImageRequest(url: base.appendingPathComponent("images/live")))
        }
        #expect(fetched.data == payload(3))
        #expect(loader.schedulingStats.processing.running == cores)

        processor.allow(cores)
        for task in held { _ = try await task.image }
        #expect(loader.schedulingStats.processing.maxRunning == cores)
    }

    @Test func priorityDecidesWhatStartsNextAndAWaiterCanBeMovedOrLeave() async throws {
        let processor = ThreadHoldingProcessor()
        let loader = await Self.loader(count: 102, limits: .init(processing: 1))
        let first = loader.imageTask(with: Self.request(0, processor, .low))
        await reach(processor.started, 1)
        // Pieces 1 and 2 queued first, in that order (tasks started together may queue in any
        // order), then the 98 others: equals start in the order they queued.
        var lows: [ImageTask] = []
        for piece in 1...2 {
            lows.append(loader.imageTask(with: Self.request(piece, processor, .low)))
            await Self.until(loader) { $0.processing.queued == piece }
        }
        lows += (3...100).map { loader.imageTask(with: Self.request($0, processor, .low)) }
        await Self.until(loader) { $0.processing.queued == 100 }
        let urgent = loader.imageTask(with: Self.request(101, processor, .veryHigh))
        await Self.until(loader) { $0.processing.queued == 101 }

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
        await Self.until(loader) { $0.processing.queued == 98 }

        processor.allow(200)
        for (index, task) in lows.enumerated() where index != 59 { _ = try await task.image }
        _ = try await first.image
        _ = try await urgent.image
        #expect(!processor.startOrder.contains("piece-60"))
        #expect(processor.startOrder.count == 101)
        #expect(processor.startOrder.prefix(5) == ["piece-0", "piece-101", "piece-50", "piece-1", "piece-2"])
        let stats = loader.schedulingStats.processing
        #expect(stats.maxRunning == 1 && stats.maxQueued == 101 && stats.queued == 0 && stats.running == 0)
    }

    /// One processing slot, held by a shown image (piece 0), and 50 prefetches queued behind it.
    static func prefetchingBehindOneShownImage() async -> (ThreadHoldingProcessor, ImageLoader, ImageTask, ImagePrefetcher) {
        let processor = ThreadHoldingProcessor()
        let loader = await Self.loader(count: 51, limits: .init(processing: 1))
        let shown = loader.imageTask(with: Self.request(0, processor, .high))
        await reach(processor.started, 1)
        let prefetcher = ImagePrefetcher(loader: loader)
        prefetcher.startPrefetching(with: (1...50).map { Self.request($0, processor, .normal) })
        await Self.until(loader) { $0.processing.queued == 50 }
        return (processor, loader, shown, prefetcher)
    }

    @Test func stoppingAPrefetchCancelsWhatHasNotStarted() async throws {
        let (processor, loader, shown, prefetcher) = await Self.prefetchingBehindOneShownImage()
        #expect(prefetcher.count == 50)

        prefetcher.stopPrefetching()
        await Self.until(loader) { $0.processing.queued == 0 }
        processor.allow(1)
        _ = try await shown.image
        #expect(processor.startOrder == ["piece-0"])
        #expect(loader.schedulingStats.processing.started == 1)
    }

    @Test func aRequestForAKeyBeingPrefetchedJoinsItsWorkAtItsOwnPriority() async throws {
        let (processor, loader, shown, prefetcher) = await Self.prefetchingBehindOneShownImage()

        // Somebody opens piece 30 while it waits to be prefetched.
        let opened = loader.imageTask(with: Self.request(30, processor, .high))
        let key = Self.request(30, processor, .high).cacheKey
        for await _ in loader.pipeline.changeStream() where flightPriority(loader, key) == .high { break }
        #expect(loader.schedulingStats.processing.queued == 50, "joined, not queued again")

        processor.allow(1)
        await reach(processor.started, 2)
        #expect(processor.startOrder == ["piece-0", "piece-30"])
        processor.allow(1)
        #expect(try await opened.image.data == Array("piece-30".utf8).reversed())
        prefetcher.stopPrefetching()
        processor.allow(100)
        _ = try await shown.image
        #expect(processor.startOrder.filter { $0 == "piece-30" }.count == 1)
        // Prefetches never count as hits: the one hit is the shown request's original.
        #expect(loader.memory.hits.value == 1)
    }

    /// The priority of the running flight of `key`.
    func flightPriority(_ loader: ImageLoader, _ key: String) -> ImageRequest.Priority? {
        loader.pipeline.bookkeeping.withLock { $0.flight(forKey: key)?.priority }
    }

    @Test func aFullQueueRefusesAPrefetchAndGivesInteractiveWorkADeadline() async throws {
        let clock = ManualClock()
        let processor = ThreadHoldingProcessor()
        let loader = await Self.loader(
            count: 6, limits: .init(processing: 1, queueCapacity: 2, interactiveDeadline: .seconds(10)), clock: clock
        )
        let running = loader.imageTask(with: Self.request(0, processor, .normal))
        await reach(processor.started, 1)
        let queued = (1...2).map { loader.imageTask(with: Self.request($0, processor, .normal)) }
        await Self.until(loader) { $0.processing.queued == 2 }

        let prefetch = loader.imageTask(with: Self.request(3, processor, .low))
        await #expect(throws: ImageLoader.Error.tooBusy(stage: "processing", waited: nil)) { try await prefetch.image }

        let interactive = loader.imageTask(with: Self.request(4, processor, .normal))
        await Self.until(loader) { $0.processing.queued == 3 }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(10))
        await #expect(throws: ImageLoader.Error.tooBusy(stage: "processing", waited: .seconds(10))) {
            try await interactive.image
        }
        #expect("\(ImageLoader.Error.tooBusy(stage: "processing", waited: .seconds(10)))".contains("try again"))

        // Neither failure is remembered: asked again with room, both load.
        processor.allow(100)
        _ = try await running.image
        for task in queued { _ = try await task.image }
        #expect(try await loader.image(for: Self.request(3, processor, .low)).data == Array("piece-3".utf8).reversed())
        let stats = loader.schedulingStats.processing
        #expect(stats.refused == 1 && stats.timedOut == 1)
    }

    @Test func aPrefetcherRunsAtMostItsCountAndStartsTheOthersInTurn() async throws {
        let processor = ThreadHoldingProcessor()
        let loader = await Self.loader(count: 6, limits: .init(processing: 4))
        let prefetcher = ImagePrefetcher(loader: loader, maxConcurrentRequestCount: 2)
        let requests = (1...5).map { Self.request($0, processor, .normal) }
        prefetcher.startPrefetching(with: requests)
        await reach(processor.started, 2)
        // Three wait in the prefetcher, not in the pipeline's queue: slots stay free for others.
        #expect(prefetcher.count == 5 && loader.schedulingStats.processing.queued == 0)
        let shown = loader.imageTask(with: Self.request(0, processor, .high))
        await reach(processor.started, 3)
        #expect(Set(processor.startOrder.prefix(2)) == ["piece-1", "piece-2"] && processor.startOrder.last == "piece-0", "the shown image took a free slot at once")

        // A waiting prefetch can be stopped; the others start first in, first out, as places free.
        prefetcher.stopPrefetching(with: [requests[3]])
        #expect(prefetcher.count == 4)
        processor.allow(10)
        _ = try await shown.image
        // Each prefetch that ends is a change, so the count's fall is seen without polling.
        await Self.until(loader) { _ in prefetcher.count == 0 }
        #expect(processor.startOrder.suffix(2) == ["piece-3", "piece-5"])
        let stats = loader.schedulingStats.processing
        #expect(stats.started == 5 && stats.maxRunning == 3, "two prefetches and the shown image")
    }
}
