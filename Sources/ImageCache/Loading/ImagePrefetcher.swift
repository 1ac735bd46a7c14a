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
/// - A caller that asks for an image being prefetched joins the same work, at its own priority.
/// - Prefetched images land on disk, and in memory when ``Destination/memoryCache`` is asked
///   for; they never count as memory or disk hits.
/// - An image already in memory is not prefetched again; a key already prefetching is not
///   started twice.
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

    private let pipeline: ImagePipeline
    /// Where prefetched images are kept.
    public let destination: Destination
    private let state: Mutex<(priority: ImageRequest.Priority, tasks: [String: ImageTask])>

    /// Creates a prefetcher into `database`'s caches.
    public convenience init(database: ImageDatabase, destination: Destination = .diskCache, priority: ImageRequest.Priority = .low) {
        self.init(pipeline: database.pipeline, destination: destination, priority: priority)
    }

    /// Creates a prefetcher into `loader`'s memory cache.
    public convenience init(loader: ImageLoader, priority: ImageRequest.Priority = .low) {
        self.init(pipeline: loader.pipeline, destination: .memoryCache, priority: priority)
    }

    init(pipeline: ImagePipeline, destination: Destination, priority: ImageRequest.Priority) {
        self.pipeline = pipeline
        self.destination = destination
        state = Mutex((priority, [:]))
    }

    /// The priority of every prefetch, running ones included.
    public var priority: ImageRequest.Priority {
        get { state.withLock { $0.priority } }
        set {
            let tasks = state.withLock { state in
                state.priority = newValue
                return Array(state.tasks.values)
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
                guard state.tasks[key] == nil else { return }
                request.priority = state.priority
                let task = ImageTask(
                    request: request, pipeline: pipeline, countsHits: false, wantsMemory: destination == .memoryCache
                )
                state.tasks[key] = task
                Task { [weak self] in
                    _ = try? await task.image
                    self?.state.withLock { state in
                        if state.tasks[key] === task { state.tasks[key] = nil }
                    }
                }
            }
        }
    }

    /// Changes the priority of the prefetches of `requests` (those still running), for example to
    /// ``ImageRequest/Priority/high`` when the person opens what one of them loads.
    public func setPriority(_ priority: ImageRequest.Priority, for requests: [ImageRequest]) {
        let tasks = state.withLock { state in requests.compactMap { state.tasks[$0.cacheKey] } }
        for task in tasks { task.priority = priority }
    }

    /// Stops prefetching `requests`: queued work that no one else waits for leaves its queue
    /// without starting.
    public func stopPrefetching(with requests: [ImageRequest]) {
        let tasks = state.withLock { state in requests.compactMap { state.tasks.removeValue(forKey: $0.cacheKey) } }
        for task in tasks { task.cancel() }
    }

    /// Stops every prefetch.
    public func stopPrefetching() {
        let tasks = state.withLock { state in
            defer { state.tasks.removeAll() }
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
    }

    /// Requests being prefetched now.
    public var count: Int { state.withLock { $0.tasks.count } }

    deinit {
        for task in state.withLock({ Array($0.tasks.values) }) { task.cancel() }
    }
}
