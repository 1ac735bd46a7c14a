import Foundation
@testable import ImageCache
import Testing
import TestSupport

/// Cancellation against a real pipeline, with downloads held at a gate: no sleeps, no polling.
@Suite(.timeLimit(.minutes(3))) struct CancellationTests {
    let url = URL(string: "http://127.0.0.1:1/images/stall")!

    @Test func oneWaiterCancellingDoesNotFailTheOthers() async throws {
        let fetcher = GatedFetcher()
        let pipeline = ImagePipeline(configuration: .init(fetcher: fetcher))
        let request = ImageRequest(url: url)
        let cancelled = Task { try await pipeline.image(for: request) }
        await reach(fetcher.started, 1)
        let others = (0..<3).map { _ in Task { try await pipeline.image(for: request) } }
        await reach(pipeline.io.counters.coalesced, 3)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        fetcher.open()
        for other in others {
            #expect(try await other.value.data == pngTagged(url.absoluteString))
        }
        #expect(fetcher.started.value == 1)
        #expect(fetcher.cancelled.value == 0)
    }

    @Test func aCancelledWaiterReturnsAtOnce() async throws {
        let fetcher = GatedFetcher()
        let pipeline = ImagePipeline(configuration: .init(fetcher: fetcher))
        let keeper = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        await reach(fetcher.started, 1)
        let waiter = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        await reach(pipeline.io.counters.coalesced, 1)
        waiter.cancel()
        // Returns while the download is still held: it never waits for it.
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(fetcher.gate.waitingCount == 1)
        keeper.cancel()
        await #expect(throws: CancellationError.self) { try await keeper.value }
    }

    @Test func theLastWaiterCancellingCancelsTheDownload() async throws {
        let fetcher = GatedFetcher()
        let pipeline = ImagePipeline(configuration: .init(fetcher: fetcher))
        let waiters = (0..<5).map { _ in Task { try await pipeline.image(for: ImageRequest(url: url)) } }
        await reach(fetcher.started, 1)
        await reach(pipeline.io.counters.coalesced, 4)
        for waiter in waiters { waiter.cancel() }
        for waiter in waiters { await #expect(throws: CancellationError.self) { try await waiter.value } }
        await reach(fetcher.cancelled, 1)
        // Nothing is remembered as failed: the next request starts a new download.
        #expect(await pipeline.state(forKey: url.absoluteString) == nil)
        let again = Task { try await pipeline.image(for: ImageRequest(url: url)) }
        await reach(fetcher.started, 2)
        again.cancel()
        await #expect(throws: CancellationError.self) { try await again.value }
        await reach(fetcher.cancelled, 2)
    }

    @Test func aVariantWhoseWaitersAllLeaveCancelsItsOriginalsDownload() async throws {
        let fetcher = GatedFetcher()
        let pipeline = ImagePipeline(configuration: .init(fetcher: fetcher))
        let variant = Task { try await pipeline.image(for: ImageRequest(url: url, processor: ByteReversingProcessor())) }
        await reach(fetcher.started, 1)
        variant.cancel()
        await #expect(throws: CancellationError.self) { try await variant.value }
        await reach(fetcher.cancelled, 1)
        #expect(await pipeline.cache.isEmpty)
    }
}
