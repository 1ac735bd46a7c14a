import Synchronization

/// The memory tier: completed images bounded by total bytes and by count, least recently used
/// out first. An image bigger than a tenth of the byte limit is not kept.
///
/// Beside the images it remembers the SHA-256 of each original this process has fetched,
/// revalidated or read, by its key, so a variant made from other bytes is known to be outdated;
/// a variant's hit reads both under one lock.
///
/// Thread-safe behind a `Mutex` rather than an actor: a hit is a synchronous lookup read from
/// everywhere, and must not cost an executor hop. ``image(forKey:)`` counts a hit; the pipeline counts its own.
public final class MemoryCache: Sendable {
    private struct Storage {
        var images: LRUCache<String, Image>
        var originals = LRUCache<String, String>(countLimit: 10_000)
    }

    private let storage: Mutex<Storage>
    /// Largest total cost kept, in bytes.
    public let costLimit: Int
    let hits = LiveCounter()

    /// Creates an empty cache.
    public init(costLimit: Int, countLimit: Int) {
        self.costLimit = costLimit
        storage = Mutex(Storage(images: LRUCache(costLimit: costLimit, countLimit: countLimit)))
    }

    /// The image for `key`, marked most recently used and counted as a hit; `nil` on a miss.
    public func image(forKey key: String) -> Image? {
        let image = storage.withLock { $0.images.value(forKey: key) }
        if image != nil { hits.increment() }
        return image
    }

    /// The image for `key`, marked most recently used but not counted (the pipeline counts the
    /// hit once it decides the entry is fresh enough to answer), and the SHA-256 remembered for
    /// the original `originalKey`, if one is given and known.
    func touch(_ key: String, original originalKey: String?) -> (Image?, original: String?) {
        storage.withLock { storage in
            guard let image = storage.images.value(forKey: key) else { return (nil, nil) }
            return (image, originalKey.flatMap { storage.originals.peek($0) })
        }
    }

    /// The SHA-256 remembered for the original of `key`.
    func original(forKey key: String) -> String? {
        storage.withLock { $0.originals.peek(key) }
    }

    /// Remembers that the original of `key` has the SHA-256 `digest` now.
    func rememberOriginal(_ digest: String, forKey key: String) {
        storage.withLock { _ = $0.originals.insert(digest, forKey: key, cost: 1) }
    }

    /// The image for `key` without counting a hit or changing the order.
    public func peek(_ key: String) -> Image? {
        storage.withLock { $0.images.peek(key) }
    }

    /// Keeps `image` under `key` unless it is over a tenth of the byte limit, evicting the least
    /// recently used images as needed.
    public func insert(_ image: Image, forKey key: String) {
        storage.withLock { storage in
            guard image.cost <= costLimit / 10 else {
                storage.images.removeValue(forKey: key)
                return
            }
            storage.images.insert(image, forKey: key, cost: image.cost)
        }
    }

    /// Removes the image for `key`, if any.
    public func remove(forKey key: String) {
        storage.withLock { _ = $0.images.removeValue(forKey: key) }
    }

    /// Removes every image (what is known of originals stays: it is no image, and still true).
    public func removeAll() {
        storage.withLock { $0.images.removeAll() }
    }

    /// Number of images and their total cost in bytes.
    public var usage: (count: Int, bytes: Int) {
        storage.withLock { ($0.images.count, $0.images.totalCost) }
    }

    /// Keys from most to least recently used.
    public var keys: [String] {
        storage.withLock { $0.images.keysByRecency }
    }
}
