/// The book's `ImageLoader` bookkeeping, read from the engine: the state of each key, as the
/// book's `cache: [String: DownloadState]` dictionary showed it.
extension ImagePipeline {
    /// The state of one key, as the book's `DownloadState`.
    public enum DownloadState: Sendable {
        /// A flight is loading it; awaiting the task gives its image.
        case inProgress(Task<Image, any Swift.Error>)
        /// Memory holds it.
        case completed(Image)
        /// It failed, and the failure answers at once for `retryAfter` more.
        case failed(Error, retryAfter: Duration)
    }

    /// The state of `key`: its flight, its image in memory, or its remembered failure.
    public func state(forKey key: String) -> DownloadState? {
        let now = clock.now
        // A lookup's flight, else a reload's or a revalidation's of the same key.
        for flightKey in [key] + ImageRequest.flightSuffixes.map({ key + $0 }) {
            if let work = machine.flight(forKey: flightKey)?.work { return .inProgress(work) }
        }
        if let image = io.memory.peek(key) { return .completed(image) }
        if let failure = machine.failure(key, now: now) {
            return .failed(failure.failure.error, retryAfter: failure.until - now)
        }
        return nil
    }

    /// Every key with a state: flights, memory's images and remembered failures.
    public var cache: [String: DownloadState] {
        // A reload's or a revalidation's flight runs under its key plus a suffix: list the key.
        let keys = Set(machine.flightByKey.keys).union(machine.failures.keys).map(ImageRequest.cacheKey(ofFlight:))
        var states: [String: DownloadState] = [:]
        for key in Set(keys).union(io.memory.keys) {
            states[key] = state(forKey: key)
        }
        return states
    }

    /// How many callers wait for `key`'s flight.
    public func waiterCount(forKey key: String) -> Int {
        machine.waiterCount(key)
    }

    /// The book's `add(_:forKey:)`: keeps `image` in memory under `key` and forgets a failure
    /// remembered for it (``store(image:forKey:)`` writes it to disk too).
    public func add(_ image: Image, forKey key: String) {
        machine.forgetFailure(key)
        io.memory.insert(image, forKey: key)
    }
}
