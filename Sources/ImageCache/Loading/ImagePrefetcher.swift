/// Loads images ahead of need, in the background, as Nuke's `ImagePrefetcher`: each request is
/// an ``ImageTask`` at the prefetcher's priority (``ImageRequest/Priority/low`` by default), in
/// the same stages as everything else, so work somebody waits for goes first, and a request
/// another caller is loading joins its flight. No queue of its own: the stages' queues order the
/// work. Isolated to ``ImageDatabase``, like the pipeline it feeds.
@ImageDatabase
public final class ImagePrefetcher {
    /// Where prefetched images are kept.
    public enum Destination: Sendable {
        /// On disk only (memory is left to what is on screen); the default.
        case diskCache
        /// In memory, and on disk when the pipeline has one.
        case memoryCache
    }

    private let pipeline: ImagePipeline
    /// Where prefetched images are kept.
    public let destination: Destination
    /// The running prefetches, by cache key.
    private var running: [String: ImageTask] = [:]

    /// The priority of prefetches: raising or lowering it changes the running ones too.
    public var priority: ImageRequest.Priority {
        didSet { for task in running.values { task.priority = priority } }
    }

    /// Creates a prefetcher feeding `pipeline`.
    /// (Not isolated, so an app builds one where it builds its routes.)
    public nonisolated init(pipeline: ImagePipeline, destination: Destination = .diskCache, priority: ImageRequest.Priority = .low) {
        self.pipeline = pipeline
        self.destination = destination
        self.priority = priority
    }

    /// Starts prefetching `requests` (those already held where they would go are skipped).
    public func startPrefetching(with requests: [ImageRequest]) {
        for request in requests { _ = start(request) }
    }

    /// Prefetches `requests` and returns once each is held where it goes (for
    /// ``Destination/diskCache``, written to disk: an answer does not wait for its write) or
    /// failed.
    /// - Returns: how many loaded (or were held already).
    @discardableResult
    public func prefetch(_ requests: [ImageRequest]) async -> Int {
        let tasks = requests.map { start($0) }
        var loaded = 0
        for (request, task) in zip(requests, tasks) {
            guard let task else {
                loaded += 1
                continue
            }
            guard (try? await task.image) != nil else { continue }
            loaded += 1
            if destination == .diskCache { await pipeline.writeFinished(forKey: request.cacheKey) }
        }
        return loaded
    }

    /// Starts one prefetch; `nil` when the image is held already.
    private func start(_ request: ImageRequest) -> ImageTask? {
        let key = request.cacheKey
        if let task = running[key] { return task }
        // Held already: memory's entry must answer this request (an entry made for other bytes
        // than the request expects, a new feed edition's, does not).
        switch destination {
        case .memoryCache: if pipeline.memoryAnswers(request) { return nil }
        case .diskCache: if pipeline.memoryAnswers(request) || pipeline.disk?.contains(key: key) == true { return nil }
        }
        var request = request
        request.priority = priority
        let task = ImageTask(request: request, pipeline: pipeline, countsHits: false, wantsMemory: destination == .memoryCache)
        running[key] = task
        Task { [weak self] in
            _ = try? await task.image
            if self?.running[key] === task { self?.running[key] = nil }
        }
        return task
    }

    /// Changes the priority of the prefetches of `requests` that are running.
    public func setPriority(_ priority: ImageRequest.Priority, for requests: [ImageRequest]) {
        for request in requests { running[request.cacheKey]?.priority = priority }
    }

    /// Stops the prefetches of `requests`; a load somebody else waits for goes on.
    public func stopPrefetching(with requests: [ImageRequest]) {
        for request in requests { running.removeValue(forKey: request.cacheKey)?.cancel() }
    }

    /// Stops every prefetch.
    public func stopPrefetching() {
        for task in running.values { task.cancel() }
        running.removeAll()
    }

    /// How many prefetches are running.
    public var count: Int { running.count }
}
