public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The front door, not isolated to the actor: a memory hit is answered on the caller's thread
/// with one lock and never touches ``ImageDatabase``; a miss hops onto the actor once, for the
/// flight. (The one `nonisolated` block of the engine, for that reason.)
nonisolated extension ImagePipeline {
    /// The book's shared database: memory, and a disk in ``Configuration/defaultDirectory``.
    public static let shared = ImagePipeline(configuration: .init(diskDirectory: Configuration.defaultDirectory))

    /// The configuration this pipeline was made with.
    public var configuration: Configuration { io.configuration }
    /// The memory tier, for this package's servers (the lane's prepared answers). Not public: a
    /// user goes through the engine, which keeps the tiers, the remembered failures and the
    /// pending writes in step.
    package var memory: MemoryCache { io.memory }
    /// The disk tier, or `nil` for a memory-only pipeline; for this package's tools.
    package var disk: DiskStorage? { io.disk }

    // MARK: - Loading

    /// Loads `request`: memory, the running flight, disk, origin or processing (see the type's
    /// summary). A memory hit is answered without suspending.
    /// - Throws: ``Error`` (a remembered failure answers at once until its expiry; an invalid
    ///   digest before anything is asked); `CancellationError` when the calling task is cancelled.
    public func image(for request: ImageRequest) async throws -> Image {
        try await response(for: request).image
    }

    /// Loads `request`, and says where the image came from (memory, disk, network, or made now).
    public func response(for request: ImageRequest) async throws -> ImageResponse {
        try await response(for: request, as: Caller(asker: .fixed(request.priority)))
    }

    /// The book's `image(_:)`: a server path resolved against ``Configuration/baseURL`` (or an
    /// absolute URL), with the configuration's processor.
    /// - Throws: ``Error/invalidURL(_:)`` at once for what is not a URL path.
    public func image(_ serverPath: String) async throws -> Image {
        try await image(for: ImageRequest(url: resolve(serverPath), processor: configuration.processor))
    }

    /// The article's `fetch(_ url:)`: `url` with the configuration's processor.
    public func fetch(_ url: URL) async throws -> Image {
        try await image(for: ImageRequest(url: url, processor: configuration.processor))
    }

    /// The article's `fetch(_ urlRequest:)`: its URL, headers and cache policy, with the
    /// configuration's processor.
    public func fetch(_ urlRequest: URLRequest) async throws -> Image {
        var request = try ImageRequest(urlRequest)
        request.processor = configuration.processor
        return try await image(for: request)
    }

    /// The front door's memory step alone, synchronously, for a server answering on an event
    /// loop: memory's answer to `request` (fresh, and of the bytes it expects), counted as a
    /// memory hit as any answer is, else `nil` (then load it with ``image(for:)``). Nothing is
    /// counted on a miss, and nothing is loaded.
    public func answerFromMemory(_ request: ImageRequest) -> Image? {
        guard case let .hit(image, refresh) = io.lookInMemory(request, countingHit: true) else { return nil }
        if refresh { refreshInBackground(request) }
        return image
    }

    /// Whether memory holds an entry that answers `request` as it is (fresh, and of the bytes it
    /// expects), without counting a hit or changing the order.
    func memoryAnswers(_ request: ImageRequest) -> Bool {
        guard let entry = io.memory.peek(request.cacheKey) else { return false }
        switch io.lookup(entry, for: request) {
        case .answer, .answerAndRefresh: return true
        case .revalidate, .miss: return false
        }
    }

    /// Whether memory holds a usable answer to `request`, or the disk's index lists its key
    /// (no file is read: a read may still find the entry damaged or stale). For deciding how to
    /// answer before deciding to wait.
    public func isCached(_ request: ImageRequest) -> Bool {
        memoryAnswers(request) || io.readyDisk?.contains(key: request.cacheKey) == true
    }

    /// Starts loading `request` and returns its handle, to change its priority or cancel it.
    public func imageTask(with request: ImageRequest) -> ImageTask {
        ImageTask(request: request, pipeline: self, countsHits: true, wantsMemory: true)
    }

    /// What the front door found in memory.
    enum Look {
        /// Memory answered (counted as a hit when the caller's hits count).
        case answered(ImageResponse)
        /// To load, revalidating `stale` if memory held one; `generation` is memory's
        /// (``MemoryCache/generation``) when it looked, so the actor looks again only if memory
        /// has gained an image since.
        case load(stale: Image?, generation: UInt64)
    }

    /// The front door's one look into memory, on the caller's thread. A request that can never
    /// be answered is refused before anything is asked: its digest first; its URL (a look into
    /// Foundation's parse) only on a miss, as memory can hold only what was stored under that
    /// very key.
    func look(_ request: ImageRequest, countingHit: Bool) throws(ImagePipeline.Error) -> Look {
        if let digest = request.expectedSHA256, !SHA256Hex.isDigest(digest) { throw .invalidDigest(digest) }
        let generation = io.memory.generation
        switch io.lookInMemory(request, countingHit: countingHit) {
        case let .hit(image, refresh):
            if refresh { refreshInBackground(request) }
            return .answered(ImageResponse(image: image, source: .memory))
        case let .stale(entry):
            try checkURL(request)
            return .load(stale: entry, generation: generation)
        case .miss:
            try checkURL(request)
            return .load(stale: nil, generation: generation)
        }
    }

    /// Loads `request` for `caller`: one look into memory, then the actor.
    func response(for request: ImageRequest, as caller: Caller) async throws -> ImageResponse {
        switch try look(request, countingHit: caller.countsHits) {
        case let .answered(response):
            return response
        case let .load(stale, generation):
            return try await load(request, stale: stale, lookedAt: generation, as: caller)
        }
    }

    /// A stale-while-revalidate entry's refresh: a revalidation at very low priority, one
    /// flight per key however many answers overlap.
    func refreshInBackground(_ request: ImageRequest) {
        var refresh = request
        refresh.cachePolicy = .reloadRevalidatingCacheData
        refresh.retryingFailures = false
        refresh.priority = .veryLow  // background work: after everything a caller waits for
        Task { _ = try? await self.response(for: refresh, as: Caller(asker: .fixed(.veryLow), countsHits: false)) }
    }

    /// Refuses a request whose URL the fetcher cannot ask for (``ImageFetching/canFetch(_:)``:
    /// `http` and `https` with a host by default), before anything is asked or remembered.
    func checkURL(_ request: ImageRequest) throws(ImagePipeline.Error) {
        guard configuration.fetcher.canFetch(request.url) else { throw .invalidURL(request.url.absoluteString) }
    }

    /// `serverPath` as a URL: an absolute `http(s)` URL, or a path resolved against the base URL.
    /// - Throws: ``Error/invalidURL(_:)`` for characters a URL cannot hold (spaces, controls,
    ///   non-ASCII), or a relative path without a base URL.
    func resolve(_ serverPath: String) throws(ImagePipeline.Error) -> URL {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%".utf8)
        guard !serverPath.isEmpty, serverPath.utf8.allSatisfy(allowed.contains) else { throw .invalidURL(serverPath) }
        if let absolute = URL(string: serverPath), let scheme = absolute.scheme {
            guard ["http", "https"].contains(scheme.lowercased()), absolute.host != nil else { throw .invalidURL(serverPath) }
            return absolute
        }
        guard let base = configuration.baseURL, let url = URL(string: serverPath, relativeTo: base)?.absoluteURL else {
            throw .invalidURL(serverPath)
        }
        return url
    }

    // MARK: - Counters

    /// Memory hits so far, then again after each hit.
    public var onMemoryAccess: AsyncStream<Int> { io.memory.hits.stream() }
    /// Disk hits so far, then again after each.
    public var onDiskAccess: AsyncStream<Int> { io.counters.diskHits.stream() }
    /// Origin requests so far, then again after each.
    public var onOriginFetch: AsyncStream<Int> { io.counters.originFetches.stream() }
    /// Conditional requests answered 304, so far and after each.
    public var onRevalidation: AsyncStream<Int> { io.counters.revalidations.stream() }
    /// Conditional requests answered with new bytes, so far and after each.
    public var onRefresh: AsyncStream<Int> { io.counters.refreshed.stream() }
    /// Stale answers, so far and after each.
    public var onStaleAnswer: AsyncStream<Int> { io.counters.staleAnswers.stream() }
}

/// An image and where it came from.
public struct ImageResponse: Sendable, Equatable {
    /// Where an answer came from.
    public enum Source: Sendable, Equatable, CustomStringConvertible {
        /// The memory cache.
        case memory
        /// The disk cache (or an image answered and still being written to it).
        case disk
        /// The origin, now.
        case network
        /// A variant made now, by the request's processor, from its original (which came from
        /// any of the others).
        case processed

        public var description: String {
            switch self {
            case .memory: "memory"
            case .disk: "disk"
            case .network: "network"
            case .processed: "processed"
            }
        }
    }

    /// The image.
    public var image: Image
    /// Where its bytes came from. Callers who joined a flight get the flight's answer. A
    /// revalidated answer (a 304) says where its stored bytes came from, `memory` or `disk`.
    public var source: Source
    /// Whether the origin was asked and said the stored bytes are current (a 304 to a
    /// conditional request): ``source`` is then where those bytes were stored.
    public var isRevalidated: Bool

    /// An answer.
    public init(image: Image, source: Source, isRevalidated: Bool = false) {
        self.image = image
        self.source = source
        self.isRevalidated = isRevalidated
    }
}

extension ImageRequest {
    /// Requests share a flight when they may share an answer: a reload, or a revalidation of
    /// what may be fresh, never joins a plain lookup that a disk hit can answer.
    var flightKey: String {
        switch cachePolicy {
        case .reloadIgnoringCacheData: cacheKey + Self.flightSuffixes[0]
        case .reloadRevalidatingCacheData: cacheKey + Self.flightSuffixes[1]
        default: cacheKey
        }
    }

    /// What a reload's and a revalidation's flight keys add to the cache key.
    static let flightSuffixes = ["\u{0}reload", "\u{0}revalidate"]

    /// The cache key a flight key belongs to (see ``flightKey``).
    static func cacheKey(ofFlight flightKey: String) -> String {
        flightKey.firstIndex(of: "\u{0}").map { String(flightKey[..<$0]) } ?? flightKey
    }
}
