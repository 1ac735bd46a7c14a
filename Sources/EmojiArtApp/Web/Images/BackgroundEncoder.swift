import Clocks
import ImageCache
import ServiceLifecycle
import Synchronization

/// Makes the variants that requests found not made, in a format slow to encode (AVIF, WebP), into
/// memory and onto disk: the request after each is a memory hit (``ServedFormat/isQuickToEncode``).
///
/// Background work must not slow the requests somebody waits for, and on a machine with few
/// cores sharing them is what slows them: libvips does its pixel work on threads of its own,
/// shared by every caller, so no thread priority of ours reaches it. So the encoder waits for a
/// quiet moment: it starts a variant only after a ``quietPeriod`` in which no request reached the
/// image routes (memory hits the fast lane answers do not count: they cost microseconds), so a
/// burst of cold thumbnails, as a browser's first catalog sends, is answered first. It makes one
/// at a time, at low priority, through an `ImagePrefetcher` (no hit is counted). Under requests
/// that never pause, a variant starts ``longestWait`` after it was listed all the same. Noting a
/// request is one atomic add: it is on every image route's path.
///
/// ``count`` (the app's `backgroundEncodes`) counts a variant from ``make(_:)`` until it is in
/// memory, or its making failed (a queue full of work somebody waits for refuses background work
/// first); ``changes`` says when it moves. At most ``maxWaiting`` wait: a variant asked for beyond
/// that is listed again by the next request for it. As a `Service` of the app, it stops at the
/// app's graceful shutdown. Thread-safe.
final class BackgroundEncoder: Service, Sendable {
    /// How long no request may reach the image routes before a variant is started.
    let quietPeriod: Duration
    /// The longest a listed variant waits for a quiet moment.
    let longestWait: Duration
    /// The most variants waiting (each piece has at most eight to make: two routes, two
    /// densities, two slow formats).
    let maxWaiting: Int
    /// ``count``, after each change: for the event stream.
    let changes = LiveValue(0)

    private let database: ImageDatabase
    private let prefetcher: ImagePrefetcher
    private let clock: AnyClock<Duration>
    private let state = Mutex(State())
    /// The image routes' requests so far: a quiet period is one in which this does not move.
    private let requests = Atomic<Int>(0)

    private struct State {
        /// Variants to make, in order, each with when it was listed and whether it is still wanted.
        var waiting: [(request: ImageRequest, listed: AnyClock<Duration>.Instant, isWanted: @Sendable () -> Bool)] = []
        /// The cache keys of `waiting`, and of the one being made.
        var keys: Set<String> = []
        /// Whether the task that makes them runs.
        var draining = false
        /// Set by ``stop()``: nothing more is made.
        var stopped = false
    }

    /// An encoder into `database`, on `clock` (tests pass one they move by hand).
    init(
        database: ImageDatabase, quietPeriod: Duration = .milliseconds(50), longestWait: Duration = .seconds(2),
        maxWaiting: Int = 4096, clock: some Clock<Duration> = ContinuousClock()
    ) {
        self.database = database
        self.quietPeriod = quietPeriod
        self.longestWait = longestWait
        self.maxWaiting = maxWaiting
        self.clock = (clock as? AnyClock<Duration>) ?? AnyClock(clock)
        prefetcher = ImagePrefetcher(database: database, destination: .memoryCache, maxConcurrentRequestCount: 1)
    }

    /// Notes a request of the image routes: background work waits until they are quiet.
    func noteRequest() {
        requests.add(1, ordering: .relaxed)
    }

    /// Makes `request`'s variant once the routes are quiet, unless it is listed already.
    /// - Parameter isWanted: asked just before it is started; `false` drops it (a new edition of
    ///   the piece arrived meanwhile: its old variant would only fail its checksum).
    func make(_ request: ImageRequest, isWanted: @escaping @Sendable () -> Bool = { true }) {
        noteRequest()
        let listed = clock.now
        let (added, start) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopped, state.waiting.count < maxWaiting, state.keys.insert(request.cacheKey).inserted else { return (false, false) }
            state.waiting.append((request, listed, isWanted))
            defer { state.draining = true }
            return (true, !state.draining)
        }
        if added { announce() }
        if start { Task { await drain() } }
    }

    /// Variants waiting or being made.
    var count: Int { state.withLock { $0.keys.count } }

    /// Drops what waits and makes nothing more (the app is shutting down); the one being made
    /// is cancelled.
    func stop() {
        state.withLock { state in
            state.stopped = true
            state.waiting.removeAll()
            state.keys.removeAll()
        }
        prefetcher.stopPrefetching()
        announce()
    }

    /// Waits for the app's graceful shutdown, then stops.
    func run() async throws {
        try? await gracefulShutdown()
        stop()
    }

    private func announce() {
        changes.update { $0 = count }
    }

    /// Makes the waiting variants, one at a time, each after a quiet period (or its longest
    /// wait); ends when none waits.
    private func drain() async {
        while true {
            guard let entry = state.withLock({ state in
                if state.waiting.isEmpty || state.stopped { state.draining = false }
                return state.draining ? state.waiting.first : nil
            }) else { return }
            let (next, listed, isWanted) = entry
            let deadline = listed.advanced(by: longestWait)
            if clock.now < deadline {
                let seen = requests.load(ordering: .relaxed)
                try? await clock.sleep(until: min(clock.now.advanced(by: quietPeriod), deadline), tolerance: nil)
                if requests.load(ordering: .relaxed) != seen, clock.now < deadline { continue }
            }
            state.withLock { state in
                if !state.waiting.isEmpty, state.waiting[0].request.cacheKey == next.cacheKey { state.waiting.removeFirst() }
            }
            // Its key stays listed until it is made: a request meanwhile does not list it again.
            if isWanted() { prefetcher.startPrefetching(with: [next]) }
            // Each prefetch that ends is a scheduling change (made, failed or cancelled).
            for await _ in database.onSchedulingChange where prefetcher.count == 0 { break }
            state.withLock { _ = $0.keys.remove(next.cacheKey) }
            announce()
        }
    }
}
