public import AsyncHTTPClient
public import Foundation
public import ImageCache
public import Logging
public import MessageSignatures
import NIOCore
import NIOHTTP1
public import Synchronization
public import GalleryFeed

/// The book's `EmojiArtModel`: loads the gallery's feed, authenticates it (its signature, made
/// with the gallery's key), then verifies every image against the signed checksums,
/// concurrently, publishing progress as it goes.
///
/// Isolation: an actor guarding the feed and the statuses. Downloads go through the
/// ``ImageDatabase`` (so verification warms the cache) and are hashed in child tasks, off the
/// actor. ``phase`` and ``progress`` are ``LiveValue``s: follow them with `stream()` from anywhere.
public actor EmojiArtModel {
    /// Where the model stands.
    public enum Phase: Sendable, Hashable {
        /// Nothing started yet.
        case idle
        /// Fetching the feed.
        case loadingFeed
        /// Verifying the images.
        case verifying
        /// Every entry has a final status.
        case ready
        /// The feed could not be loaded; the message says why and what to do.
        case failed(String)
    }

    /// The model's errors.
    public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
        /// The gallery did not answer or answered with an error.
        case galleryUnavailable(url: String, reason: String)
        /// The gallery answered, but not with a feed.
        case invalidFeed(url: String, reason: String)
        /// The feed failed authentication: nothing from it is used.
        case unauthenticatedFeed(url: String, failure: SignatureFailure)
        /// Offline, and no feed of this gallery was ever stored.
        case feedNotCached(url: String)

        public var description: String {
            switch self {
            case let .galleryUnavailable(url, reason):
                "the gallery at \(url) is not answering with its feed (\(reason)): start it with `emojiart gallery`, or pass --gallery URL, then retry"
            case let .invalidFeed(url, reason):
                "\(url) did not send a valid feed (\(reason)): is --gallery the URL of an EmojiArt gallery?"
            case let .unauthenticatedFeed(url, failure):
                "the gallery's feed at \(url) could not be authenticated: \(failure)"
            case let .feedNotCached(url):
                "offline, and the cache has no feed from \(url): run once without --offline first"
            }
        }
    }

    /// The gallery's base URL, e.g. `http://127.0.0.1:8080`.
    public nonisolated let galleryURL: URL
    /// The cache every image goes through.
    public nonisolated let pipeline: ImagePipeline
    /// How many images are verified at once.
    public nonisolated let concurrency: Int
    /// Where the model stands, live.
    public nonisolated let phase = LiveValue<Phase>(.idle)
    /// Verification progress, live.
    public nonisolated let progress = LiveValue(VerificationProgress(total: 0))
    /// The first feed entry of each piece number, readable from anywhere.
    public nonisolated let feedByPiece = LiveValue<[Int: ImageFile]>([:])
    /// The key the current feed was verified with, and whether it was trusted on first use.
    public nonisolated let feedKey = LiveValue<FeedKey?>(nil)
    /// How many times the catalog's entries or their statuses have changed: a page rendered from
    /// them is current while this count is the one it was rendered at (one atomic load).
    public nonisolated let catalogEdits = Atomic<Int>(0)
    /// Feeds refused, by reason (`bad_signature`, `expired`, ...).
    public nonisolated let signatureFailures = LiveValue<[String: Int]>([:])
    /// Catalog loads that found a feed check under way and shared it instead of asking the
    /// gallery again.
    public nonisolated let sharedFeedChecks = LiveValue(0)
    /// Catalog loads that asked for a feed check within ``feedCheckInterval`` of the last
    /// request for the feed, and were answered from what the model holds.
    public nonisolated let skippedFeedChecks = LiveValue(0)
    /// Retries (``retry()``) that joined one under way instead of starting another.
    public nonisolated let sharedRetries = LiveValue(0)
    /// Why the feed was refused in the latest attempt to get it; `nil` once an attempt ends
    /// otherwise (a feed verifies, the gallery does not answer, the feed does not decode).
    public nonisolated let feedRefusal = LiveValue<SignatureFailure?>(nil)
    /// Where the feed being shown came from: downloaded, confirmed by a 304, or the stored copy
    /// (offline, or because the gallery could not be reached).
    public nonisolated let feedOrigin = LiveValue<FeedOrigin?>(nil)
    /// How image requests use the cache: HTTP's rules, or the cache only when offline.
    public nonisolated let cachePolicy: CachePolicy
    /// The origin the gallery's signed feed must name (`--gallery-origin`): by default the
    /// origin of ``galleryURL``.
    public nonisolated var galleryOrigin: String { authenticator.galleryOrigin }
    /// The least time between two feed checks that catalog loads ask for
    /// (``refreshIfFeedChanged()``), on the model's clock (`now`): 30 s by default. The app's own
    /// rule: no field of the gallery's answers lengthens or shortens it.
    public nonisolated let feedCheckInterval: Duration
    /// When the feed shown was last authenticated and until when its prices count as current;
    /// `nil` before any feed is shown.
    public nonisolated let feedAge = LiveValue<FeedAge?>(nil)

    /// How old the catalog's feed is: when it was last authenticated (downloaded and verified, or
    /// confirmed by a signed 304 bound to its request), and the end of the signature's life (or
    /// 24 h after, whichever is sooner) after which its prices are stale: shown "as of" then,
    /// online or offline, so withholding the gallery's answers cannot keep a catalog looking
    /// current.
    public struct FeedAge: Sendable, Hashable {
        /// When the feed was last authenticated, when known.
        public var authenticatedAt: Date?
        /// When its prices go stale, when known.
        public var validUntil: Date?

        /// The longest a feed's prices count as current after it was authenticated: 24 hours.
        public static let maximumAge: TimeInterval = 86_400

        /// An age for a feed authenticated at `authenticatedAt` by a signature expiring at
        /// `expires`: current until the sooner of `expires` and ``maximumAge`` after.
        public init(authenticatedAt: Date?, expires: Date?) {
            self.authenticatedAt = authenticatedAt
            let limit = authenticatedAt.map { $0.addingTimeInterval(Self.maximumAge) }
            validUntil = [expires, limit].compactMap { $0 }.min()
        }

        /// Whether the prices are stale at `now`: past ``validUntil``, or with no date known.
        public func isStale(at now: Date) -> Bool {
            guard let validUntil else { return true }
            return now > validUntil
        }

        /// What the page and `sync` say at `now`: when the feed was last authenticated, and, when
        /// stale, that its prices are as of then.
        public func text(at now: Date) -> String {
            guard let authenticatedAt else {
                return "Prices stale: when the feed was last authenticated is not known."
            }
            let when = authenticatedAt.formatted(.iso8601)
            guard isStale(at: now) else { return "Feed last authenticated at \(when)." }
            let until = validUntil.map { " (its signature's validity ended at \($0.formatted(.iso8601)))" } ?? ""
            return "Prices as of \(when), when the feed was last authenticated\(until): stale, they may have changed since."
        }
    }

    /// Where a feed came from.
    public enum FeedOrigin: Sendable, Hashable {
        /// Downloaded and authenticated just now.
        case downloaded
        /// The stored copy, which the gallery confirmed is current (304).
        case revalidated
        /// The stored copy, without asking the gallery (`--offline`).
        case offline
        /// The stored copy, because the gallery could not be reached; `reason` says why.
        case galleryUnreachable(reason: String)
        /// The stored copy, because the gallery's answer could not be authenticated (a 304 not
        /// signed by the stored feed's key for its `ETag`, and asking again failed too, or a
        /// refused feed): shown, but no longer confirmed. `lastAuthenticated` is when it last was.
        case notReauthenticated(failure: SignatureFailure, lastAuthenticated: Date?)

        /// Whether the gallery was asked and did not answer.
        public var isGalleryUnreachable: Bool {
            if case .galleryUnreachable = self { true } else { false }
        }

        /// What the page and `sync` say about a feed that could not be re-authenticated, `nil`
        /// for any other origin: why, and since when the catalog is not confirmed.
        public var notReauthenticatedText: String? {
            guard case let .notReauthenticated(failure, lastAuthenticated) = self else { return nil }
            let since = lastAuthenticated.map { "it was last authenticated at \($0.formatted(.iso8601))" } ?? "when it was last authenticated is not known"
            return "The catalog could not be re-authenticated (\(failure)); \(since), and it is shown as it was then."
        }

        /// Whether the feed shown could not be re-authenticated.
        public var isNotReauthenticated: Bool {
            if case .notReauthenticated = self { true } else { false }
        }
    }

    /// The key a feed was verified with.
    public struct FeedKey: Sendable, Hashable {
        /// The key's fingerprint (its RFC 7638 JWK thumbprint).
        public var fingerprint: String
        /// Whether the key was trusted just now, at first contact with the gallery.
        public var trustedOnFirstUse: Bool

        /// Creates a description of a feed's key.
        public init(fingerprint: String, trustedOnFirstUse: Bool) {
            self.fingerprint = fingerprint
            self.trustedOnFirstUse = trustedOnFirstUse
        }
    }

    /// The feed, as loaded by ``loadImages()``.
    public internal(set) var imageFeed: [ImageFile] = []
    /// The status of each feed entry, by index in ``imageFeed``.
    public internal(set) var statuses: [VerificationStatus] = []

    /// The bytes of the feed in use, to tell a changed feed from the same one again.
    var adoptedFeed: [UInt8] = []
    /// When the feed in use was last authenticated, when known.
    var feedAuthenticatedAt: Date?
    let client: HTTPClient
    let authenticator: FeedAuthenticator
    let logger: Logger
    let now: @Sendable () -> Date
    var run: Task<Void, Never>?
    /// The feed check under way (``refreshIfFeedChanged()``), which later catalog loads share.
    var feedCheck: Task<Bool, Never>?
    /// When the feed was last asked for (on ``now``): catalog loads ask again only
    /// ``feedCheckInterval`` later.
    var lastFeedRequest: Date?
    /// The retry under way with a catalog shown (``retry()``), which later retries join.
    var retryRun: Task<Void, Never>?
    /// How many feeds were adopted: a retry's outcomes for an earlier feed are not written into
    /// the statuses of one adopted meanwhile.
    var feedEditions = 0

    /// Creates a model.
    /// - Parameters:
    ///   - concurrency: images verified at once, at least 1.
    ///   - trust: which gallery keys a feed may be signed with; trust on first use by default.
    ///   - now: the wall clock signatures are checked against and the feed is dated by.
    ///   - offline: never touch the network: the feed and every image come from the cache, and
    ///     what it does not hold is reported as not cached.
    ///   - galleryOrigin: the origin the gallery's signed feed must name; by default the origin
    ///     of `galleryURL` (give it when `galleryURL` is a proxy in front of the gallery).
    ///   - feedCheckInterval: the least time between feed checks asked by catalog loads
    ///     (``feedCheckInterval``).
    public init(
        galleryURL: URL, pipeline: ImagePipeline, concurrency: Int = 8, client: HTTPClient = EmojiArtModel.galleryClient,
        trust: GalleryTrust = .default, now: @escaping @Sendable () -> Date = { Date() }, offline: Bool = false,
        galleryOrigin: String? = nil, feedCheckInterval: Duration = .seconds(30), logger: Logger = Logger(label: "emojiart")
    ) {
        self.feedCheckInterval = feedCheckInterval
        self.logger = logger
        self.now = now
        cachePolicy = offline ? .returnCacheDataDontLoad : .useProtocolCachePolicy
        self.galleryURL = galleryURL
        self.pipeline = pipeline
        self.concurrency = max(1, concurrency)
        self.client = client
        authenticator = FeedAuthenticator(galleryURL: galleryURL, galleryOrigin: galleryOrigin, trust: trust, client: client, now: now)
    }

    /// The HTTP client for a gallery: `HTTPImageFetcher.clientConfiguration` (a dead gallery
    /// reports at once), but a redirect is not followed. A gallery serves its
    /// feed, its key and its images itself; a redirect would let it send the app to any URL (another
    /// host, a port of this machine), past the check that every image is at the gallery's origin.
    /// A redirect is an error that names its status.
    public static let galleryClient: HTTPClient = {
        var configuration = HTTPImageFetcher.clientConfiguration
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// The most entries a feed may list: a larger one is refused whole (``Error/invalidFeed(url:reason:)``).
    /// Every catalog page lists every entry, so a gallery (or whoever answers at first contact)
    /// could otherwise make each page megabytes long. The largest gallery `emojiart gallery` serves
    /// lists 3,564 (1,188 pieces, three times each).
    public static let maxFeedEntries = 10_000

    /// Where the app's cache fetches images: over ``galleryClient``.
    public static func galleryFetcher() -> HTTPImageFetcher {
        HTTPImageFetcher(client: galleryClient)
    }

    /// The absolute URL of a feed entry's image.
    public nonisolated func imageURL(_ file: ImageFile) -> URL {
        URL(string: file.url, relativeTo: galleryURL)?.absoluteURL ?? galleryURL.appendingPathComponent(file.url)
    }

    /// The request for a feed entry's image (or its variant made by `processor`): checked
    /// against the feed's checksum, under the model's cache policy.
    public nonisolated func imageRequest(
        _ file: ImageFile, processor: (any ImageProcessing)? = nil, retryingFailures: Bool = false
    ) -> ImageRequest {
        ImageRequest(
            url: imageURL(file), processor: processor, expectedSHA256: file.checksum, retryingFailures: retryingFailures,
            cachePolicy: cachePolicy
        )
    }

    /// Downloads every entry of the feed through the cache, hashes it and compares it with the
    /// feed's checksum, `concurrency` at a time (the book's window of child tasks: it bounds the
    /// tasks started here, while the downloads beneath them are bounded by the pipeline's one
    /// total and per-host limit). One bad entry never stops the others.
    /// - Parameter retryingFailures: forget failures the cache remembers (an explicit retry).
    /// - Returns: the final counts.
    @discardableResult
    public func verifyImages(retryingFailures: Bool = false) async -> VerificationProgress {
        await verify(Array(imageFeed.indices), retryingFailures: retryingFailures) { index, status in
            statuses[index] = status
            catalogEdits.add(1, ordering: .releasing)
            progress.update { $0.record(status) }
        }
        return progress.value
    }

    /// Verifies the feed's entries at `indices`, `concurrency` at a time, handing each outcome to
    /// `record` on the actor as it arrives. With `retryingFailures`, only the first entry of each
    /// image forgets its remembered failure, and the others are verified once all those are done,
    /// from what they found: the feed lists a piece three times, and each asking again would have
    /// the gallery asked up to three times per piece for one retry.
    func verify(_ indices: [Int], retryingFailures: Bool, record: (Int, VerificationStatus) -> Void) async {
        guard retryingFailures else { return await verify(indices.map { ($0, imageRequest(imageFeed[$0])) }, record: record) }
        var retried = Set<String>()
        let (first, again) = indices.reduce(into: ([Int](), [Int]())) { split, index in
            if retried.insert(imageFeed[index].url).inserted { split.0.append(index) } else { split.1.append(index) }
        }
        await verify(first.map { ($0, imageRequest(imageFeed[$0], retryingFailures: true)) }, record: record)
        await verify(again.map { ($0, imageRequest(imageFeed[$0])) }, record: record)
    }

    /// Runs `requests` (a feed index and its request), `concurrency` at a time.
    private func verify(_ requests: [(Int, ImageRequest)], record: (Int, VerificationStatus) -> Void) async {
        let pipeline = pipeline
        await withTaskGroup(of: (Int, VerificationStatus).self) { group in
            var next = 0
            func addNext() {
                guard next < requests.count else { return }
                let (index, request) = requests[next]
                next += 1
                group.addTask { (index, await Self.verify(request, pipeline: pipeline)) }
            }
            for _ in 0..<concurrency { addNext() }
            for await (index, status) in group {
                record(index, status)
                addNext()
            }
        }
    }

    /// Loads the feed and verifies it, updating ``phase``; a failure ends in `.failed`.
    public func loadAndVerify(retryingFailures: Bool = false) async {
        phase.update { $0 = .loadingFeed }
        do {
            try await loadImages()
        } catch {
            phase.update { $0 = .failed("\(error)") }
            return
        }
        phase.update { $0 = .verifying }
        await verifyImages(retryingFailures: retryingFailures)
        phase.update { $0 = .ready }
    }

    /// Starts ``loadAndVerify(retryingFailures:)`` in the background unless it is running: a call
    /// before the run's task has begun finds it running too (its phase is set here, at once).
    public func start(retryingFailures: Bool = false) {
        if run != nil, phase.value == .loadingFeed || phase.value == .verifying { return }
        phase.update { $0 = .loadingFeed }
        run = Task { await self.loadAndVerify(retryingFailures: retryingFailures) }
    }

    /// Waits for the background run started by ``start(retryingFailures:)``.
    public func waitUntilDone() async {
        await run?.value
    }

    /// The feed entry at `index` and its status.
    public func entry(at index: Int) -> (file: ImageFile, status: VerificationStatus)? {
        guard imageFeed.indices.contains(index) else { return nil }
        return (imageFeed[index], statuses[index])
    }

    /// Every entry with its status, in feed order.
    /// The entries at `positions` that the catalog has (none past its end), with their statuses.
    public func entries(in positions: Range<Int>) -> [(file: ImageFile, status: VerificationStatus)] {
        let range = positions.clamped(to: 0..<imageFeed.count)
        return Array(zip(imageFeed[range], statuses[range]))
    }

    public var entries: [(file: ImageFile, status: VerificationStatus)] {
        Array(zip(imageFeed, statuses))
    }

    /// Verifies one entry: load through the cache, hash, compare.
    private nonisolated static func verify(_ request: ImageRequest, pipeline: ImagePipeline) async -> VerificationStatus {
        do {
            let image = try await pipeline.image(for: request)
            let actual = SHA256Hex.digest(image.data)
            guard let expected = request.expectedSHA256, actual == expected else {
                return .mismatch(expected: request.expectedSHA256 ?? "none", actual: actual)
            }
            return .verified
        } catch {
            return VerificationStatus(error)
        }
    }

    /// A short reason for a network error.
    static func reason(_ error: any Swift.Error) -> String {
        HTTPImageFetcher.describe(error)
    }
}
