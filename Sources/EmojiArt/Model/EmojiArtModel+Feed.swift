import AsyncHTTPClient
public import Foundation
import HTTPCaching
import ImageCache
import Logging
import MessageSignatures
import NIOCore
import NIOHTTP1

/// The feed: fetched, authenticated and kept in the cache like any entry.
extension EmojiArtModel {
    /// The feed's URL.
    nonisolated var feedURL: String { galleryURL.appendingPathComponent("gallery/images").absoluteString }

    /// The cache key of the feed as verified with the key of `fingerprint`: a stored feed is
    /// used only while the gallery's trusted key is the one it was verified with.
    nonisolated func feedCacheKey(fingerprint: String) -> String {
        feedURL + "#verified-by=" + fingerprint
    }

    /// Loads the feed from `GET /gallery/images`, authenticates it before using any entry, and
    /// keeps it in the cache.
    ///
    /// The feed is `no-cache`: a stored copy is revalidated every time (`If-None-Match`), and a
    /// 304 reuses it without downloading, re-checking or re-hashing it (it was authenticated
    /// when it arrived, and is kept under the fingerprint of the key that verified it). When the
    /// gallery cannot be reached or fails, the stored copy is used and ``feedOrigin`` says so;
    /// offline, only the stored copy is.
    /// - Throws: ``Error/galleryUnavailable(url:reason:)`` (and nothing stored),
    ///   ``Error/unauthenticatedFeed(url:failure:)``, ``Error/invalidFeed(url:reason:)`` or
    ///   ``Error/feedNotCached(url:)``.
    @discardableResult
    public func loadImages() async throws -> [ImageFile] {
        let fetched = try await fetchFeed()
        return try adopt(fetched)
    }

    /// Asks the gallery whether its feed changed (one conditional request, answered 304 when it
    /// did not) and, when it did, verifies the new feed in the background: changed pieces are
    /// downloaded and checked against their new checksums, unchanged ones come from the cache.
    /// The catalog page calls it on every load. Offline, or while a run is going on, it does
    /// nothing; when the gallery cannot be reached, ``feedOrigin`` says so and the catalog stays.
    /// - Returns: whether a new verification started.
    @discardableResult
    public func refreshIfFeedChanged() async -> Bool {
        guard phase.value == .ready, cachePolicy.allowsLoading else { return false }
        let fetched: FetchedFeed
        do {
            fetched = try await fetchFeed()
        } catch {
            logger.warning("the catalog stays as it is: \(error)")
            return false
        }
        guard fetched.bytes != adoptedFeed else {
            feedOrigin.update { $0 = fetched.origin }
            return false
        }
        do {
            try adopt(fetched)
        } catch {
            logger.warning("the gallery's new feed is not used: \(error)")
            return false
        }
        phase.update { $0 = .verifying }
        run = Task {
            await self.verifyImages()
            self.phase.update { $0 = .ready }
        }
        return true
    }

    /// A feed as fetched or found, authenticated, not yet decoded.
    struct FetchedFeed: Sendable {
        var bytes: [UInt8]
        var key: FeedKey
        var origin: FeedOrigin
    }

    /// Gets the feed's bytes: from the gallery (conditionally on the stored copy), or the stored
    /// copy (a 304, offline, or the gallery unreachable); authenticates what is downloaded and
    /// stores it.
    private func fetchFeed() async throws -> FetchedFeed {
        let url = feedURL
        let trusted = authenticator.trustedFingerprint()
        var stored: Image?
        if let trusted { stored = await database.cachedImage(forKey: feedCacheKey(fingerprint: trusted)) }
        if cachePolicy == .returnCacheDataDontLoad {
            guard let stored, let trusted else { throw Error.feedNotCached(url: url) }
            return FetchedFeed(bytes: stored.data, key: FeedKey(fingerprint: trusted, trustedOnFirstUse: false), origin: .offline)
        }
        var request = HTTPClientRequest(url: url)
        for (name, value) in stored?.cacheHeaders?.conditionalFields ?? [] { request.headers.add(name: name, value: value) }
        let requestTime = now()
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await client.execute(request, timeout: .seconds(15))
            if response.status == .notModified, let stored, let trusted, let headers = stored.cacheHeaders {
                var refreshed = stored
                refreshed.cacheHeaders = headers.updated(
                    withNotModified: response.headers.map { ($0.name, $0.value) }, requestTime: requestTime, responseTime: now()
                )
                await database.store(image: refreshed, forKey: feedCacheKey(fingerprint: trusted))
                return FetchedFeed(bytes: stored.data, key: FeedKey(fingerprint: trusted, trustedOnFirstUse: false), origin: .revalidated)
            }
            guard response.status == .ok else {
                throw Error.galleryUnavailable(url: url, reason: "HTTP \(response.status.code)")
            }
            body = try await response.body.collect(upTo: 4 * 1024 * 1024)
        } catch {
            let failure = error as? Error ?? Error.galleryUnavailable(url: url, reason: Self.reason(error))
            guard case let .galleryUnavailable(_, reason) = failure, let stored, let trusted else { throw failure }
            logger.warning("the gallery at \(galleryURL.absoluteString) is unreachable (\(reason)): using the stored catalog")
            return FetchedFeed(
                bytes: stored.data, key: FeedKey(fingerprint: trusted, trustedOnFirstUse: false),
                origin: .galleryUnreachable(reason: reason)
            )
        }
        let outcome: FeedAuthenticator.Outcome
        do {
            outcome = try await authenticator.authenticate(status: Int(response.status.code), headers: response.headers, body: body)
        } catch {
            signatureFailures.update { $0[error.reason, default: 0] += 1 }
            feedRefusal.update { $0 = error }
            throw Error.unauthenticatedFeed(url: url, failure: error)
        }
        let bytes = Array(body.readableBytesView)
        let headers = CacheHeaders(fields: response.headers.map { ($0.name, $0.value) }, requestTime: requestTime, responseTime: now())
        if !headers.cacheControl.noStore {
            let entry = Image(data: bytes, contentType: response.headers.first(name: "content-type") ?? "application/json", cacheHeaders: headers)
            await database.store(image: entry, forKey: feedCacheKey(fingerprint: outcome.fingerprint))
        }
        return FetchedFeed(
            bytes: bytes, key: FeedKey(fingerprint: outcome.fingerprint, trustedOnFirstUse: outcome.trustedOnFirstUse),
            origin: .downloaded
        )
    }

    /// Decodes authenticated feed bytes and makes them the model's feed.
    @discardableResult
    private func adopt(_ fetched: FetchedFeed) throws -> [ImageFile] {
        let (bytes, key, origin) = (fetched.bytes, fetched.key, fetched.origin)
        let feed: [ImageFile]
        do {
            feed = try JSONDecoder().decode([ImageFile].self, from: Data(bytes))
        } catch {
            throw Error.invalidFeed(url: feedURL, reason: "\(error)")
        }
        adoptedFeed = bytes
        feedRefusal.update { $0 = nil }
        feedOrigin.update { $0 = origin }
        feedKey.update { $0 = key }
        if key.trustedOnFirstUse {
            logger.notice("first contact with \(galleryURL.absoluteString): its feed key \(key.fingerprint) is trusted from now on; a different key will be refused until `emojiart trust --gallery \(galleryURL.absoluteString)`")
        }
        imageFeed = feed
        let byPiece = Dictionary(feed.compactMap { file in file.pieceNumber.map { ($0, file) } }) { first, _ in first }
        feedByPiece.update { $0 = byPiece }
        statuses = Array(repeating: .pending, count: feed.count)
        progress.update { $0 = VerificationProgress(total: feed.count) }
        return feed
    }
}
