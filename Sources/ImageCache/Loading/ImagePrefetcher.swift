import Synchronization

/// Loads images before anybody asks for them, at low priority, so they are in the cache when
/// they are (after Nuke's `ImagePrefetcher`).
///
/// ```swift
/// let prefetcher = ImagePrefetcher(database: database)
/// prefetcher.startPrefetching(with: detailRequests)   // once the catalog is shown
/// prefetcher.stopPrefetching(with: offScreen)         // cancels what has not started
/// ```
///
/// - Prefetches run at ``priority`` (``ImageRequest/Priority/low`` by default), so they never
///   start before queued work somebody waits for; when a queue is full they are refused first.
/// - At most ``maxConcurrentRequestCount`` run at once (stopped ones count until they end); the
///   others wait here, first in first out, and take no place in the pipeline's queues until they
///   start.
/// - A caller that asks for an image being prefetched joins the same work, at its own priority.
/// - Prefetched images land on disk, and in memory when ``Destination/memoryCache`` is asked
///   for; they never count as memory or disk hits.
/// - An image already in memory is not prefetched again; a key already prefetching (or waiting
///   to) is not started twice.
///
/// Thread-safe.
public final class ImagePrefetcher: Sendable {
    /// Where prefetched images are kept.
    public enum Destination: Sendable {
        /// On disk only: memory stays for what is shown (a loader without a disk keeps nothing).
        case diskCache
        /// On disk and in memory.
        case memoryCache
    }

    private struct State {
        var priority: ImageRequest.Priority
        /// Prefetches started, by key.
        var running: [String: ImageTask] = [:]
        /// Prefetches not started yet, in order, each at the priority it will start with.
        var waiting: [ImageRequest] = []
        /// Prefetches stopped that have not ended yet: they still hold their place.
        var stopping = 0
    }

    private let pipeline: ImagePipeline
    /// Where prefetched images are kept.
    public let destination: Destination
    /// The most prefetches running at once.
    public let maxConcurrentRequestCount: Int
    private let state: Mutex<State>

    /// Creates a prefetcher into `database`'s caches.
    /// - Parameters:
    ///   - database: whose pipeline loads the images and whose caches keep them.
    ///   - destination: disk only (the default), or memory too.
    ///   - priority: the priority of every prefetch (``ImageRequest/Priority/low`` by default).
    ///   - maxConcurrentRequestCount: the most prefetches running at once (at least 1); by
    ///     default as many as the pipeline's limits admit.
    public convenience init(
        database: ImageDatabase, destination: Destination = .diskCache, priority: ImageRequest.Priority = .low,
        maxConcurrentRequestCount: Int = .max
    ) {
        self.init(pipeline: database.pipeline, destination: destination, priority: priority, maxConcurrentRequestCount: maxConcurrentRequestCount)
    }

    /// Creates a prefetcher into `loader`'s memory cache.
    /// - Parameters:
    ///   - loader: whose pipeline loads the images and whose memory keeps them.
    ///   - priority: the priority of every prefetch (``ImageRequest/Priority/low`` by default).
    ///   - maxConcurrentRequestCount: the most prefetches running at once (at least 1); by
    ///     default as many as the pipeline's limits admit.
    public convenience init(loader: ImageLoader, priority: ImageRequest.Priority = .low, maxConcurrentRequestCount: Int = .max) {
        self.init(pipeline: loader.pipeline, destination: .memoryCache, priority: priority, maxConcurrentRequestCount: maxConcurrentRequestCount)
    }

    init(pipeline: ImagePipeline, destination: Destination, priority: ImageRequest.Priority, maxConcurrentRequestCount: Int) {
        self.pipeline = pipeline
        self.destination = destination
        self.maxConcurrentRequestCount = max(1, maxConcurrentRequestCount)
        state = Mutex(State(priority: priority))
    }

    /// The priority of every prefetch, running and waiting ones included.
    public var priority: ImageRequest.Priority {
        get { state.withLock { $0.priority } }
        set {
            let tasks = state.withLock { state in
                state.priority = newValue
                for index in state.waiting.indices { state.waiting[index].priority = newValue }
                return Array(state.running.values)
            }
            for task in tasks { task.priority = newValue }
        }
    }

    /// Starts prefetching `requests` that are neither in memory nor prefetching already.
    public func startPrefetching(with requests: [ImageRequest]) {
        for var request in requests {
            let key = request.cacheKey
            if pipeline.memory.peek(key) != nil { continue }
            state.withLock { state in
                guard state.running[key] == nil, !state.waiting.contains(where: { $0.cacheKey == key }) else { return }
                request.priority = state.priority
                state.waiting.append(request)
                startWaiting(&state)
            }
        }
    }

    /// Starts waiting prefetches while fewer than the most run (under the lock).
    private func startWaiting(_ state: inout State) {
        while state.running.count + state.stopping < maxConcurrentRequestCount, !state.waiting.isEmpty {
            let request = state.waiting.removeFirst()
            let key = request.cacheKey
            // Made meanwhile (somebody asked for it): nothing to do.
            if pipeline.memory.peek(key) != nil { continue }
            let task = ImageTask(request: request, pipeline: pipeline, countsHits: false, wantsMemory: destination == .memoryCache)
            state.running[key] = task
            Task { [weak self] in
                _ = try? await task.image
                self?.finished(task, key: key)
            }
        }
    }

    /// A prefetch ended (made, failed or cancelled): its place goes to the next one waiting, and
    /// the pipeline's followers hear of it (``ImagePipeline/onSchedulingChange``), so one that
    /// watches ``count`` sees it fall.
    private func finished(_ task: ImageTask, key: String) {
        state.withLock { state in
            if state.running[key] === task { state.running[key] = nil } else { state.stopping -= 1 }
            startWaiting(&state)
        }
        pipeline.changed()
    }

    /// Changes the priority of the prefetches of `requests` (running or waiting), for example to
    /// ``ImageRequest/Priority/high`` when the person opens what one of them loads.
    public func setPriority(_ priority: ImageRequest.Priority, for requests: [ImageRequest]) {
        let keys = Set(requests.map(\.cacheKey))
        let tasks = state.withLock { state in
            for index in state.waiting.indices where keys.contains(state.waiting[index].cacheKey) {
                state.waiting[index].priority = priority
            }
            return keys.compactMap { state.running[$0] }
        }
        for task in tasks { task.priority = priority }
    }

    /// Stops prefetching `requests`: those waiting here are dropped, and queued work that no one
    /// else waits for leaves its queue without starting.
    public func stopPrefetching(with requests: [ImageRequest]) {
        let keys = Set(requests.map(\.cacheKey))
        let tasks = state.withLock { state in
            state.waiting.removeAll { keys.contains($0.cacheKey) }
            let stopped = keys.compactMap { state.running.removeValue(forKey: $0) }
            state.stopping += stopped.count
            return stopped
        }
        for task in tasks { task.cancel() }
        pipeline.changed()
    }

    /// Stops every prefetch.
    public func stopPrefetching() {
        let tasks = state.withLock { state in
            defer { state.running.removeAll() }
            state.waiting.removeAll()
            state.stopping += state.running.count
            return Array(state.running.values)
        }
        for task in tasks { task.cancel() }
        pipeline.changed()
    }

    /// Requests being prefetched now, or waiting to be (stopped ones not included). A prefetch
    /// leaves the count once its image is stored (in memory, for ``Destination/memoryCache``),
    /// or its loading failed, or it is stopped; the pipeline's ``ImagePipeline/onSchedulingChange``
    /// yields after each fall.
    public var count: Int { state.withLock { $0.running.count + $0.waiting.count } }

    deinit {
        for task in state.withLock({ Array($0.running.values) }) { task.cancel() }
    }
}
