import Synchronization

/// The memory tier: completed images bounded by total bytes and by count, least recently used
/// out first. An image bigger than a tenth of the byte limit is not kept. An image's
/// ``Image/attachment`` (what a server made from its bytes) is kept with it, in the same budget.
///
/// Images answered but not yet written to disk are held here too, apart from the budget and
/// bounded by the pipeline (``ImagePipeline/Limits/pendingWriteBytes``): a lookup finds them
/// even once the least-recently-used order has let them go, until their write ends.
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
        /// Images waiting for their disk write, by key, with the write that holds each (two
        /// writes of one key may overlap: the later one's image is held).
        var writing: [String: (image: Image, write: UInt64)] = [:]
        var writingBytes = 0
        var maxWritingBytes = 0
        /// Writes under way (two of one key count twice): the one record of pending writes,
        /// which ``ImagePipeline/flush()`` waits to see at 0.
        var writes = 0
        /// Bumped by every image that could answer a look it did not answer before (one kept or
        /// held for its write), and published in ``MemoryCache/generation``.
        var generation: UInt64 = 0

        /// A look's miss may no longer hold from now on: counted, and published for lookers.
        mutating func gained(_ published: borrowing Atomic<UInt64>) {
            generation &+= 1
            published.store(generation, ordering: .releasing)
        }

        /// The image for `key`, in the budget or held for its write.
        func peek(_ key: String) -> Image? {
            images.peek(key) ?? writing[key]?.image
        }
    }

    private let storage: Mutex<Storage>
    private let published = Atomic<UInt64>(0)
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
        let image = storage.withLock { $0.images.value(forKey: key) ?? $0.writing[key]?.image }
        if image != nil { hits.increment() }
        return image
    }

    /// The image for `key`, marked most recently used but not counted (the pipeline counts the
    /// hit once it decides the entry is fresh enough to answer), and the SHA-256 remembered for
    /// the original `originalKey`, if one is given and known.
    func touch(_ key: String, original originalKey: String?) -> (Image?, original: String?) {
        storage.withLock { storage in
            guard let image = storage.images.value(forKey: key) ?? storage.writing[key]?.image else { return (nil, nil) }
            return (image, originalKey.flatMap { storage.originals.peek($0) })
        }
    }

    /// Changes whenever memory gains an image (kept, or held for its write): a miss seen at one
    /// generation still holds while the generation is the same, so the pipeline need not look
    /// again. An atomic load, no lock.
    var generation: UInt64 { published.load(ordering: .acquiring) }

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
        storage.withLock { $0.peek(key) }
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
            storage.gained(published)
        }
    }

    /// Keeps `attachment` with the image held under `key`, if that image holds the very bytes of
    /// `image` (the same storage, ``Image/sharesBytes(with:)``) with its content type, and the
    /// two together stay within a tenth of the byte limit.
    /// - Returns: whether it was kept; `false` when memory has let that image go or holds
    ///   other bytes under `key` now.
    @discardableResult
    public func attach(_ attachment: any ImageAttachment, toBytesOf image: Image, forKey key: String) -> Bool {
        storage.withLock { storage in
            func attached(_ held: Image) -> Image? {
                guard held.sharesBytes(with: image), held.contentType == image.contentType else { return nil }
                var held = held
                held.attachment = attachment
                return held
            }
            var kept = false
            if let held = storage.images.peek(key), let image = attached(held), image.cost <= costLimit / 10 {
                // In place of the image it extends, as recent as it was (a hit just touched it).
                storage.images.replace(image, forKey: key, cost: image.cost)
                kept = true
            }
            if let (held, write) = storage.writing[key], let image = attached(held) {
                storage.writing[key] = (image, write)
                kept = true
            }
            return kept
        }
    }

    /// Holds `image` under `key` until ``release(forKey:write:bytes:)`` of `write`: a lookup
    /// finds it meanwhile, whatever the budget evicts. Its bytes are counted as waiting.
    func hold(_ image: Image, forKey key: String, write: UInt64) {
        storage.withLock { storage in
            storage.writing[key] = (image, write)
            storage.writingBytes += image.byteCount
            storage.writes += 1
            storage.maxWritingBytes = max(storage.maxWritingBytes, storage.writingBytes)
            storage.gained(published)
        }
    }

    /// Ends the hold of `write` on `key` (a later write's hold stays) and uncounts its `bytes`.
    func release(forKey key: String, write: UInt64, bytes: Int) {
        storage.withLock { storage in
            if storage.writing[key]?.write == write { storage.writing[key] = nil }
            storage.writingBytes -= bytes
            storage.writes -= 1
        }
    }

    /// Whether an image of `key` waits for its disk write.
    func isHeldForWrite(_ key: String) -> Bool {
        storage.withLock { $0.writing[key] != nil }
    }

    /// Images waiting for their disk writes: how many keys, the writes under way, their bytes,
    /// and the most bytes held at once.
    var heldForWrites: (count: Int, writes: Int, bytes: Int, maxBytes: Int) {
        storage.withLock { ($0.writing.count, $0.writes, $0.writingBytes, $0.maxWritingBytes) }
    }

    /// Removes the image for `key`, if any, including one held for its disk write (whose bytes
    /// stay counted as waiting until the write ends).
    public func remove(forKey key: String) {
        storage.withLock { storage in
            storage.images.removeValue(forKey: key)
            storage.writing[key] = nil
        }
    }

    /// Removes every image (what is known of originals stays: it is no image, and still true;
    /// images waiting for their disk writes stay until written).
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
