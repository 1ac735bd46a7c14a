import Foundation
import ImageCache
import Testing

@Suite(.timeLimit(.minutes(1))) struct CancellationTests {
    let url = URL(string: "http://127.0.0.1:1/images/stall")!

    @Test func oneWaiterCancellingDoesNotFailTheOthers() async throws {
        let fetcher = GatedFetcher()
        let loader = ImageLoader(fetcher: fetcher)
        let request = ImageRequest(url: url)
        let cancelled = Task { try await loader.image(for: request) }
        let others = (0..<3).map { _ in Task { try await loader.image(for: request) } }
        #expect(try await eventually { fetcher.started == 1 })
        #expect(try await eventually { await loader.waiterCount(forKey: request.cacheKey) == 4 })
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        fetcher.open()
        for other in others {
            #expect(try await other.value.data == Array(url.absoluteString.utf8))
        }
        #expect(fetcher.started == 1)
        #expect(fetcher.cancelled == 0)
    }

    @Test func aCancelledWaiterReturnsAtOnce() async throws {
        let fetcher = GatedFetcher()
        let loader = ImageLoader(fetcher: fetcher)
        let waiter = Task { try await loader.image(for: ImageRequest(url: url)) }
        let keeper = Task { try await loader.image(for: ImageRequest(url: url)) }
        #expect(try await eventually { fetcher.started == 1 })
        waiter.cancel()
        // Returns long before the 30 s download would end.
        await #expect(throws: CancellationError.self) { try await waiter.value }
        keeper.cancel()
    }

    @Test func theLastWaiterCancellingCancelsTheDownload() async throws {
        let fetcher = GatedFetcher()
        let loader = ImageLoader(fetcher: fetcher)
        let waiters = (0..<5).map { _ in Task { try await loader.image(for: ImageRequest(url: url)) } }
        #expect(try await eventually { fetcher.started == 1 })
        for waiter in waiters { waiter.cancel() }
        for waiter in waiters { await #expect(throws: CancellationError.self) { try await waiter.value } }
        #expect(try await eventually { fetcher.cancelled == 1 })
        // Nothing is remembered as failed: the next request starts a new download.
        #expect(await loader.state(forKey: url.absoluteString) == nil)
        let again = Task { try await loader.image(for: ImageRequest(url: url)) }
        #expect(try await eventually { fetcher.started == 2 })
        again.cancel()
    }
}
