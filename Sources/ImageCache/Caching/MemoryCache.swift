import Synchronization

/// The memory tier: completed images bounded by total bytes and by count, least recently used
/// out first. An image bigger than a tenth of the byte limit is not kept.
///
/// Thread-safe behind a `Mutex` rather than an actor: a hit is a synchronous lookup read from
/// everywhere, and must not cost an executor hop. Each hit is counted.
public final class MemoryCache: Sendable {
    private let storage: Mutex<LRUCache<String, Image>>
    /// Largest total cost kept, in bytes.
    public let costLimit: Int
    let hits = LiveCounter()

    /// Creates an empty cache.
    public init(costLimit: Int, countLimit: Int) {
        self.costLimit = costLimit
        storage = Mutex(LRUCache(costLimit: costLimit, countLimit: countLimit))
    }

    /// The image for `key`, marked most recently used and counted as a hit; `nil` on a miss.
    public func image(forKey key: String) -> Image? {
        let image = storage.withLock { $0.value(forKey: key) }
        if image != nil { hits.increment() }
        return image
    }

    /// The image for `key`, marked most recently used but not counted: the pipeline counts the
    /// hit once it decides the entry is fresh enough to answer.
    func touch(_ key: String) -> Image? {
        storage.withLock { $0.value(forKey: key) }
    }

    /// The image for `key` without counting a hit or changing the order.
    public func peek(_ key: String) -> Image? {
        storage.withLock { $0.peek(key) }
    }

    /// Keeps `image` under `key` unless it is over a tenth of the byte limit, evicting the least
    /// recently used images as needed.
    public func insert(_ image: Image, forKey key: String) {
        storage.withLock { cache in
            guard image.cost <= costLimit / 10 else {
                cache.removeValue(forKey: key)
                return
            }
            cache.insert(image, forKey: key, cost: image.cost)
        }
    }

    /// Removes the image for `key`, if any.
    public func remove(forKey key: String) {
        storage.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// Removes every image.
    public func removeAll() {
        storage.withLock { $0.removeAll() }
    }

    /// Number of images and their total cost in bytes.
    public var usage: (count: Int, bytes: Int) {
        storage.withLock { ($0.count, $0.totalCost) }
    }

    /// Keys from most to least recently used.
    public var keys: [String] {
        storage.withLock { $0.keysByRecency }
    }
}
