import Foundation
import ImageCache
import Testing

@Suite(.timeLimit(.minutes(3))) struct MemoryCacheTests {
    func image(_ size: Int) -> Image {
        Image(data: [UInt8](repeating: 1, count: size), contentType: "image/png")
    }

    @Test func evictsLeastRecentlyUsedFirstByCost() {
        let cache = MemoryCache(costLimit: 10_000, countLimit: 100)
        for key in ["a", "b", "c"] { cache.insert(image(900), forKey: key) }  // cost 900 + 9 + 64 each
        _ = cache.image(forKey: "a")  // a is now the most recent
        for key in ["d", "e", "f", "g", "h", "i", "j", "k"] { cache.insert(image(900), forKey: key) }
        #expect(cache.usage.bytes <= 10_000)
        #expect(cache.peek("b") == nil, "b was least recently used and must go first")
        #expect(cache.peek("a") != nil, "a was touched and must outlive c")
        #expect(cache.keys.first == "k")
    }

    @Test func evictsByCount() {
        let cache = MemoryCache(costLimit: .max, countLimit: 3)
        for key in ["a", "b", "c", "d"] { cache.insert(image(10), forKey: key) }
        #expect(cache.usage.count == 3)
        #expect(cache.keys == ["d", "c", "b"])
    }

    @Test func anImageOverATenthOfTheLimitIsNotKept() {
        let cache = MemoryCache(costLimit: 10_000, countLimit: 100)
        cache.insert(image(2_000), forKey: "big")
        #expect(cache.peek("big") == nil)
        cache.insert(image(500), forKey: "small")
        #expect(cache.peek("small") != nil)
    }

    @Test func countsHitsNotMisses() async throws {
        let pipeline = ImagePipeline()
        let a = ImageRequest(url: try #require(URL(string: "http://127.0.0.1:1/a")))
        let missing = ImageRequest(url: try #require(URL(string: "http://127.0.0.1:1/missing")))
        await pipeline.add(image(10), forKey: a.cacheKey)
        _ = pipeline.cachedImage(for: a)
        _ = pipeline.cachedImage(for: a)
        _ = pipeline.cachedImage(for: missing)
        var counts = pipeline.onMemoryAccess.makeAsyncIterator()
        #expect(await counts.next() == 2)
        #expect(pipeline.memory.peek(a.cacheKey) != nil)
        _ = pipeline.memory.peek(a.cacheKey)  // peeking is not a hit
        _ = await pipeline.cachedImage(forKey: a.cacheKey)  // nor is reading what is stored
        var again = pipeline.onMemoryAccess.makeAsyncIterator()
        #expect(await again.next() == 2)
    }
}
