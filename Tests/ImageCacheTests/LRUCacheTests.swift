@testable import ImageCache
import Testing
import TestSupport

/// The hand-built LRU list under both caches, checked after every operation.
@Suite struct LRUCacheTests {
    @Test(arguments: 0..<20) func randomOperationsKeepTheListWholeAndTheLimits(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var cache = LRUCache<Int, Int>(costLimit: 1_000, countLimit: 12)
        var model: [Int: Int] = [:]  // what must still be there, by key
        for _ in 0..<2_000 {
            let key = Int(random.next() % 24)
            switch random.next() % 6 {
            case 0, 1:
                let cost = Int(random.next() % 300)
                let evicted = cache.insert(key, forKey: key, cost: cost)
                model[key] = cost
                for victim in evicted {
                    #expect(victim.key != key, "the entry just inserted was evicted")
                    model[victim.key] = nil
                }
                // Both limits hold, except that the newest entry alone may be over the cost limit.
                #expect(cache.count <= 12)
                #expect(cache.totalCost <= 1_000 || cache.count == 1)
            case 2:
                #expect(cache.value(forKey: key) == model[key].map { _ in key })
                if model[key] != nil { #expect(cache.keysByRecency.first == key) }
            case 3:
                #expect((cache.removeValue(forKey: key) != nil) == (model.removeValue(forKey: key) != nil))
            case 4:
                if let removed = cache.removeLeastRecent() {
                    #expect(model.removeValue(forKey: removed.key) != nil)
                }
            default:
                #expect(cache.peek(key) == model[key].map { _ in key })
            }
            #expect(cache.invariantViolation() == nil, "\(cache.invariantViolation() ?? "")")
            #expect(Set(cache.keysByRecency) == Set(model.keys))
            #expect(cache.totalCost == model.values.reduce(0, +))
        }
        cache.removeAll()
        #expect(cache.invariantViolation() == nil && cache.count == 0 && cache.totalCost == 0)
    }
}
