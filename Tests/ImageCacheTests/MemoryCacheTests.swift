import Foundation
@testable import ImageCache
import Testing

@Suite(.timeLimit(.minutes(3))) struct MemoryCacheTests {
    func image(_ size: Int) -> Image {
        Image(data: [UInt8](repeating: 1, count: size), contentType: "image/png")
    }

    @Test func evictsLeastRecentlyUsedFirstByCost() {
        let cache = MemoryCache(costLimit: 11_000, countLimit: 100)
        for key in ["a", "b", "c"] { cache.insert(image(900), forKey: key) }  // cost 1,024 (its storage) + 9 + 64 each
        _ = cache.image(forKey: "a")  // a is now the most recent
        for key in ["d", "e", "f", "g", "h", "i", "j", "k"] { cache.insert(image(900), forKey: key) }
        #expect(cache.usage.bytes <= 11_000)
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
        _ = pipeline.answerFromMemory(a)
        _ = pipeline.answerFromMemory(a)
        _ = pipeline.answerFromMemory(missing)
        var counts = pipeline.onMemoryAccess.makeAsyncIterator()
        #expect(await counts.next() == 2)
        #expect(pipeline.memory.peek(a.cacheKey) != nil)
        _ = pipeline.memory.peek(a.cacheKey)  // peeking is not a hit
        _ = await pipeline.storedImage(forKey: a.cacheKey)  // nor is reading what is stored
        var again = pipeline.onMemoryAccess.makeAsyncIterator()
        #expect(await again.next() == 2)
    }

    /// What a server made from an image's bytes (its answer's head), as the app keeps it.
    final class Head: ImageAttachment {
        let cost: Int
        init(cost: Int) { self.cost = cost }
    }

    @Test func anAttachmentIsKeptOnlyWithTheVeryBytesItWasMadeFrom() {
        let cache = MemoryCache(costLimit: 100_000, countLimit: 100)
        let stored = image(1_000)
        cache.insert(stored, forKey: "a")
        let held = cache.image(forKey: "a")!  // as a hit hands it out: the same storage
        // Equal bytes in a buffer of their own (loaded again, or made again): not these bytes.
        #expect(!cache.attach(Head(cost: 10), toBytesOf: image(1_000), forKey: "a"))
        #expect(!cache.attach(Head(cost: 10), toBytesOf: held, forKey: "b"), "nothing under that key")
        var retyped = held
        retyped.contentType = "image/webp"
        #expect(!cache.attach(Head(cost: 10), toBytesOf: retyped, forKey: "a"), "the same bytes, another type")
        #expect(cache.peek("a")?.attachment == nil)
        let head = Head(cost: 10)
        #expect(cache.attach(head, toBytesOf: held, forKey: "a"))
        #expect(cache.peek("a")?.attachment === head)
        // Other bytes under the key: the attachment goes with the old ones.
        cache.insert(image(1_000), forKey: "a")
        #expect(cache.peek("a")?.attachment == nil)
        // Changing a copy's bytes or type drops its attachment; memory's copy keeps it.
        let fresh = cache.image(forKey: "a")!
        #expect(cache.attach(head, toBytesOf: fresh, forKey: "a"))
        var changed = cache.peek("a")!
        changed.data = [1, 2, 3]
        #expect(changed.attachment == nil && cache.peek("a")?.attachment === head)
    }

    @Test func attachmentsAreInTheOneBudgetAndEvictedWithTheirImages() {
        let unit = image(850).cost  // its storage as SwiftNIO allocates it (1,024), and 73 of bookkeeping
        #expect(unit == 1024 + 9 + 64)
        let limit = 10 * (unit + 77)
        let cache = MemoryCache(costLimit: limit, countLimit: 1000)
        for key in ["a", "b", "c"] { cache.insert(image(850), forKey: key) }
        #expect(cache.attach(Head(cost: 77), toBytesOf: cache.peek("c")!, forKey: "c"))
        #expect(cache.usage.bytes == 3 * unit + 77, "counted in the same budget")
        #expect(cache.keys == ["c", "b", "a"], "attaching does not reorder")
        for key in ["d", "e", "f", "g", "h", "i", "j", "k"] { cache.insert(image(850), forKey: key) }
        #expect(cache.peek("a") == nil && cache.usage.bytes == 10 * unit + 77)
        // Filled to within one attachment of the limit.
        var filler = 0
        while limit - cache.usage.bytes >= 77 {
            cache.insert(image(1), forKey: "pad-\(filler)")
            filler += 1
        }
        // Over the limit by an attachment: the least recent image goes, not the one attached.
        #expect(cache.attach(Head(cost: 77), toBytesOf: cache.peek("k")!, forKey: "k"))
        #expect(cache.peek("k")?.attachment != nil)
        #expect(cache.peek("b") == nil, "the least recent went")
        #expect(cache.usage.bytes <= limit)
        // Evicted with its image.
        for key in ["l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v"] { cache.insert(image(850), forKey: key) }
        #expect(cache.peek("c") == nil && cache.peek("k") == nil)
        #expect(cache.usage.bytes == cache.keys.compactMap { cache.peek($0)?.cost }.reduce(0, +))
        // An attachment that would make its image over a tenth of the limit is not kept.
        #expect(!cache.attach(Head(cost: 100), toBytesOf: cache.peek("v")!, forKey: "v"))
        #expect(cache.peek("v")?.attachment == nil)
    }

    @Test func anImageWaitingForItsWriteIsFoundWhateverTheBudgetEvicts() {
        let cache = MemoryCache(costLimit: 2_000, countLimit: 100)
        let waiting = image(150)
        cache.insert(waiting, forKey: "w")
        cache.hold(waiting, forKey: "w", write: 1)
        for key in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"] { cache.insert(image(150), forKey: key) }
        #expect(!cache.keys.contains("w"), "the budget let it go")
        #expect(cache.peek("w") == waiting && cache.image(forKey: "w") == waiting, "held until written")
        #expect(cache.heldForWrites.count == 1 && cache.heldForWrites.bytes == 150)
        // A later write of the key holds its image; the earlier one's end does not let it go.
        let newer = image(120)
        cache.hold(newer, forKey: "w", write: 2)
        cache.release(forKey: "w", write: 1, bytes: 150)
        #expect(cache.peek("w") == newer && cache.heldForWrites.bytes == 120)
        cache.removeAll()
        #expect(cache.peek("w") == newer, "emptying memory does not drop what waits for the disk")
        cache.release(forKey: "w", write: 2, bytes: 120)
        #expect(cache.peek("w") == nil && cache.heldForWrites.count == 0 && cache.heldForWrites.bytes == 0)
        #expect(cache.heldForWrites.maxBytes == 270)
        // Removed: no longer answered, though its write's bytes count until it ends.
        cache.hold(waiting, forKey: "w", write: 3)
        cache.remove(forKey: "w")
        #expect(cache.peek("w") == nil && cache.image(forKey: "w") == nil && cache.heldForWrites.bytes == 150)
        cache.release(forKey: "w", write: 3, bytes: 150)
        #expect(cache.heldForWrites.bytes == 0)
    }
}
