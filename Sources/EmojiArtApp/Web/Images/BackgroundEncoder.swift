import Clocks
import ImageCache
import Synchronization

/// Makes the variants that requests found not made, in a format slow to encode (AVIF, WebP), into
/// memory and onto disk: the request after each is a memory hit (``ServedFormat/isQuickToEncode``).
///
/// Background work must not slow the requests somebody waits for, and on a machine with few
/// cores sharing them is what slows them: libvips does its pixel work on threads of its own, so
/// no thread priority of ours reaches it. So the encoder waits for a quiet moment: it starts a
/// variant only after a ``quietPeriod`` in which the image routes had no request (a burst of cold
/// thumbnails, as a browser's first catalog sends, is answered first), and makes one at a time,
/// at low priority, through an `ImagePrefetcher` (no hit is counted). Under requests that never
/// pause it starts the next one after ``longestWait`` all the same. Noting a request is one
/// atomic add: it is on every image route's path.
///
/// ``count`` (the app's `backgroundEncodes`) counts a variant from ``make(_:)`` until it is in
/// memory. Thread-safe.
final class BackgroundEncoder: Sendable {
    /// How long the image routes must have been quiet before a variant is started.
    let quietPeriod: Duration
    /// The longest a variant waits for a quiet moment.
    let longestWait: Duration

    private let database: ImageDatabase
    private let prefetcher: ImagePrefetcher
    private let clock: AnyClock<Duration>
    private let state = Mutex(State())
    /// The image routes' requests so far: a quiet period is one in which this does not move.
    private let requests = Atomic<Int>(0)

    private struct State {
        /// Variants to make, in order.
        var waiting: [ImageRequest] = []
        /// Whether the task that makes them runs.
        var draining = false
    }

    /// An encoder into `database`, on `clock` (tests pass one they move by hand).
    init(
        database: ImageDatabase, quietPeriod: Duration = .milliseconds(50), longestWait: Duration = .seconds(2),
        clock: some Clock<Duration> = ContinuousClock()
    ) {
        self.database = database
        self.quietPeriod = quietPeriod
        self.longestWait = longestWait
        self.clock = (clock as? AnyClock<Duration>) ?? AnyClock(clock)
        prefetcher = ImagePrefetcher(database: database, destination: .memoryCache, maxConcurrentRequestCount: 1)
    }

    /// Notes a request of the image routes: background work waits until they are quiet.
    func noteRequest() {
        requests.add(1, ordering: .relaxed)
    }

    /// Makes `request`'s variant once the routes are quiet, unless it is waiting already.
    func make(_ request: ImageRequest) {
        noteRequest()
        let start = state.withLock { state -> Bool in
            guard !state.waiting.contains(where: { $0.cacheKey == request.cacheKey }) else { return false }
            state.waiting.append(request)
            defer { state.draining = true }
            return !state.draining
        }
        if start { Task { await drain() } }
    }

    /// Variants waiting or being made.
    var count: Int { state.withLock { $0.waiting.count } + prefetcher.count }

    /// Makes the waiting variants, one at a time, each after a quiet period (or the longest
    /// wait); ends when none waits.
    private func drain() async {
        var waitingSince = clock.now
        while true {
            let deadline = waitingSince.advanced(by: longestWait)
            if clock.now < deadline {
                let seen = requests.load(ordering: .relaxed)
                try? await clock.sleep(until: min(clock.now.advanced(by: quietPeriod), deadline), tolerance: nil)
                if requests.load(ordering: .relaxed) != seen, clock.now < deadline { continue }
            }
            guard let next = state.withLock({ $0.waiting.first }) else {
                // Nothing waits: stop, unless one was added since the look above.
                let stopped = state.withLock { state -> Bool in
                    if state.waiting.isEmpty { state.draining = false }
                    return !state.draining
                }
                if stopped { return } else { continue }
            }
            // Listed by the prefetcher before it leaves the list here: never counted as 0 while
            // it is made.
            prefetcher.startPrefetching(with: [next])
            state.withLock { state in
                if let index = state.waiting.firstIndex(where: { $0.cacheKey == next.cacheKey }) { state.waiting.remove(at: index) }
            }
            // Each prefetch that ends is a scheduling change.
            for await _ in database.onSchedulingChange where prefetcher.count == 0 { break }
            waitingSince = clock.now
        }
    }
}
