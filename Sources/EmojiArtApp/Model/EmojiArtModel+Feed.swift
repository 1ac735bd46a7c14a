import AsyncHTTPClient
import Foundation
import HTTPCaching
import ImageCache
import Logging
import MessageSignatures
import NIOCore
import NIOHTTP1
import Synchronization
public import GalleryFeed

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
    /// 304 signed by the key the stored copy was verified with, for its `ETag`, reuses it without
    /// downloading it (it is kept under the fingerprint of the key that verified it). Every use
    /// of the stored copy first checks its `ETag` and bytes are a pair the trust file recorded when
    /// a feed was accepted with that key: a copy changed on disk is removed and never used. When the gallery cannot be reached or fails, or its answer cannot be authenticated,
    /// the stored copy is used and ``feedOrigin`` says so; offline, only the stored copy is.
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
    /// The catalog page calls it on every load; it asks at most once per ``feedCheckInterval``
    /// (on the model's clock), however many loads call it. Offline, or while a run is going on, it
    /// does nothing; when the gallery cannot be reached, or its answer cannot be authenticated,
    /// ``feedOrigin`` says so and the catalog stays. Loads while a check is under way share it
    /// (``sharedFeedChecks``): a hundred at once send one request, not a hundred.
    /// - Returns: whether a new verification started (for the load that started the check).
    @discardableResult
    public func refreshIfFeedChanged() async -> Bool {
        await refreshIfFeedChanged(ignoringInterval: false)
    }

    /// ``refreshIfFeedChanged()``, asking within ``feedCheckInterval`` too when
    /// `ignoringInterval` (a retry while the stored feed failed its last check); a check under
    /// way is shared all the same.
    func refreshIfFeedChanged(ignoringInterval: Bool) async -> Bool {
        guard phase.value == .ready, cachePolicy.allowsLoading else { return false }
        if let feedCheck {
            sharedFeedChecks.update { $0 += 1 }
            _ = await feedCheck.value
            return false
        }
        // A clock set back counts as the interval over: the check is not held off by it.
        if !ignoringInterval, let last = lastFeedRequest, case let elapsed = now().timeIntervalSince(last),
           elapsed >= 0, elapsed < Self.seconds(feedCheckInterval) {
            skippedFeedChecks.update { $0 += 1 }
            return false
        }
        // Unstructured, so a load that leaves (its client went away) does not cancel the check
        // the others wait for.
        let check = Task { await self.checkFeed() }
        feedCheck = check
        let started = await check.value
        feedCheck = nil
        return started
    }

    /// One check of ``refreshIfFeedChanged()``: the conditional request, and what follows.
    private func checkFeed() async -> Bool {
        let fetched: FetchedFeed
        do {
            fetched = try await fetchFeed()
        } catch {
            logger.warning("the catalog stays as it is: \(error)")
            // Not only logged: the page says the catalog shown is no longer confirmed.
            if case let .unauthenticatedFeed(_, failure)? = error as? Error {
                feedOrigin.update { $0 = .notReauthenticated(failure: failure, lastAuthenticated: feedAuthenticatedAt) }
            }
            return false
        }
        guard fetched.bytes != adoptedFeed else {
            noteOrigin(fetched)
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

    /// `duration` in seconds.
    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// A feed as fetched or found, authenticated, not yet decoded.
    struct FetchedFeed: Sendable {
        var bytes: [UInt8]
        var key: FeedKey
        var origin: FeedOrigin
        /// When the feed was last authenticated (downloaded and verified, or confirmed by a
        /// signed 304) and until when its prices are current.
        var age: FeedAge
        /// The entries, when already decoded and checked (a download is, before it is stored).
        var entries: [ImageFile]? = nil
    }

    /// The stored feed a request can be made conditional on, with the key it was verified with.
    struct StoredFeed: Sendable {
        var image: Image
        var fingerprint: String
        /// Where it stands among the feeds accepted from this gallery with that key: only the
        /// newest is shown without the gallery's confirmation.
        var standing: TrustStore.FeedStanding
        /// Until when its prices are current, as the trust file recorded it (the newest only).
        var validUntil: Date?

        /// The feed's bytes as found, under `origin`.
        func fetched(_ origin: FeedOrigin) -> FetchedFeed {
            FetchedFeed(
                bytes: image.data, key: FeedKey(fingerprint: fingerprint, trustedOnFirstUse: false), origin: origin,
                age: FeedAge(authenticatedAt: image.cacheHeaders?.responseTime, expires: validUntil)
            )
        }

        /// The identity the trust file knows it by.
        var identity: String { FeedAuthenticator.feedIdentity(etag: image.cacheHeaders?.etag, body: image.data) }
    }

    /// Gets the feed's bytes: from the gallery (conditionally on the stored copy), or the stored
    /// copy (a signed 304, offline, or the gallery unreachable); authenticates what is
    /// downloaded and stores it.
    ///
    /// The stored copy is sent as the request's validators only when its `ETag` and bytes are a
    /// pair the trust file recorded for a feed accepted from this gallery with its key
    /// (`FeedAuthenticator.feedIdentity`); any other is refused as
    /// ``SignatureFailure/storedFeedUnknown(gallery:)`` (changed on disk, or stored by an older
    /// build), removed, and the whole signed feed asked for instead. Without the gallery's
    /// confirmation (offline, the gallery down, its answer refused) it is shown only when it is
    /// the newest accepted from this gallery and key
    /// (``SignatureFailure/storedFeedSuperseded(gallery:)`` otherwise).
    ///
    /// A 304 that does not authenticate (unsigned, another key, another `ETag`, older than a
    /// signature already accepted) is refused like a forged feed, and the gallery is asked once
    /// more without validators, so a gallery that does not sign its 304s still gets its signed
    /// feed through. When that fails too, or a downloaded feed is refused, a stored feed is
    /// still shown, as ``FeedOrigin/notReauthenticated(failure:lastAuthenticated:)``.
    private func fetchFeed() async throws -> FetchedFeed {
        let url = feedURL
        // A refusal is the latest word until this attempt ends: if it ends for another reason
        // (the gallery down, an undecodable feed), that reason is what the page says.
        feedRefusal.update { $0 = nil }
        let trusted: String?
        do {
            trusted = try authenticator.trustedFingerprint()
        } catch {
            refuse(error)
            throw Error.unauthenticatedFeed(url: url, failure: error)
        }
        var stored: StoredFeed?
        // Why the stored feed was refused, when it was: what to say when nothing else is had.
        var storedRefusal: SignatureFailure?
        if let trusted, let image = await pipeline.storedImage(forKey: feedCacheKey(fingerprint: trusted)) {
            // The cache directory may be written by others: its bytes are used only while they
            // are those of a feed this machine authenticated from this gallery with that key.
            let standing: TrustStore.FeedStanding
            do {
                standing = try authenticator.standing(ofFeed: image.data, etag: image.cacheHeaders?.etag, fingerprint: trusted)
            } catch {
                refuse(error)
                throw Error.unauthenticatedFeed(url: url, failure: error)
            }
            switch standing {
            case let .newest(validUntil):
                stored = StoredFeed(image: image, fingerprint: trusted, standing: standing, validUntil: validUntil)
            case .earlier:
                stored = StoredFeed(image: image, fingerprint: trusted, standing: standing)
            case .unknown:
                let failure = SignatureFailure.storedFeedUnknown(gallery: galleryURL.absoluteString)
                refuse(failure)
                storedRefusal = failure
                logger.warning("\(failure): the stored copy is removed, and not used to ask the gallery")
                await pipeline.removeEntry(forKey: feedCacheKey(fingerprint: trusted))
            }
        }
        // Shown without the gallery's word only when it is the newest this machine accepted
        // from this gallery: an older accepted feed is a rollback.
        var shown: StoredFeed?
        if let stored {
            if case .newest = stored.standing {
                shown = stored
            } else {
                storedRefusal = .storedFeedSuperseded(gallery: galleryOrigin)
            }
        }
        if cachePolicy == .returnCacheDataDontLoad {
            guard let shown else {
                if let storedRefusal {
                    if stored != nil { refuse(storedRefusal) }
                    throw Error.unauthenticatedFeed(url: url, failure: storedRefusal)
                }
                throw Error.feedNotCached(url: url)
            }
            return shown.fetched(.offline)
        }
        lastFeedRequest = now()
        do {
            do {
                return try await exchange(conditionalOn: stored)
            } catch let refused as NotModifiedRefused {
                // Maybe a gallery that does not sign its 304s: ask once for the signed feed.
                logger.warning("the gallery's 304 is refused (\(refused.failure)): asking again for the whole feed")
                do {
                    return try await exchange(conditionalOn: nil)
                } catch let Error.galleryUnavailable(_, reason) {
                    logger.warning("asking again failed (\(reason))")
                    throw Error.unauthenticatedFeed(url: url, failure: refused.failure)
                }
            }
        } catch let Error.unauthenticatedFeed(_, failure) {
            guard let shown else { throw Error.unauthenticatedFeed(url: url, failure: failure) }
            logger.warning("the stored catalog is shown but not re-authenticated: \(failure)")
            return shown.fetched(.notReauthenticated(failure: failure, lastAuthenticated: shown.image.cacheHeaders?.responseTime))
        } catch let Error.galleryUnavailable(_, reason) {
            guard let shown else {
                if let storedRefusal {
                    logger.warning("the gallery at \(galleryURL.absoluteString) is unreachable (\(reason))")
                    throw Error.unauthenticatedFeed(url: url, failure: storedRefusal)
                }
                throw Error.galleryUnavailable(url: url, reason: reason)
            }
            logger.warning("the gallery at \(galleryURL.absoluteString) is unreachable (\(reason)): using the stored catalog")
            return shown.fetched(.galleryUnreachable(reason: reason))
        }
    }

    /// A 304 that did not authenticate: the caller asks again without validators.
    struct NotModifiedRefused: Swift.Error {
        let failure: SignatureFailure
    }

    /// One request for the feed, with a fresh ``FeedNonce`` and conditional on `stored` when
    /// given, and its answer authenticated for that very request: a signed 304 for the stored
    /// feed, or a signed 200 (then stored, whatever its `Cache-Control` says: the stored feed is
    /// the app's own record).
    /// - Throws: ``Error/galleryUnavailable(url:reason:)``, ``Error/unauthenticatedFeed(url:failure:)``
    ///   or, for a 304 that does not authenticate, ``NotModifiedRefused``.
    private func exchange(conditionalOn stored: StoredFeed?) async throws -> FetchedFeed {
        let url = feedURL
        var request = HTTPClientRequest(url: url)
        let nonce = FeedNonce.make()
        request.headers.add(name: "EmojiArt-Feed-Nonce", value: nonce)
        let conditional = stored?.image.cacheHeaders?.conditionalFields ?? []
        for (name, value) in conditional { request.headers.add(name: name, value: value) }
        let requestTime = now()
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            // One deadline for the whole exchange, body included.
            let deadline = ContinuousClock.now + .seconds(15)
            response = try await client.execute(request, timeout: .seconds(15))
            if response.status == .notModified, let stored, let headers = stored.image.cacheHeaders, !conditional.isEmpty {
                let outcome: FeedAuthenticator.Outcome
                do {
                    let verified = try await authenticator.authenticateNotModified(
                        headers: response.headers, storedETag: headers.etag, fingerprint: stored.fingerprint, nonce: nonce,
                        storedFeed: stored.identity
                    )
                    outcome = try authenticator.record(verified)
                } catch {
                    refuse(error)
                    throw NotModifiedRefused(failure: error)
                }
                // Authenticated: the stored feed is current. Only the exchange's times are
                // taken from the 304; its other fields are not covered by the signature.
                var refreshed = stored.image
                let responseTime = now()
                refreshed.cacheHeaders = headers.updated(withNotModified: [], requestTime: requestTime, responseTime: responseTime)
                await pipeline.store(image: refreshed, forKey: feedCacheKey(fingerprint: stored.fingerprint))
                var fetched = stored.fetched(.revalidated)
                fetched.age = FeedAge(authenticatedAt: responseTime, expires: outcome.expires)
                return fetched
            }
            guard response.status == .ok else {
                throw Error.galleryUnavailable(url: url, reason: "HTTP \(response.status.code)")
            }
            body = try await response.body.collect(upTo: 4 * 1024 * 1024, by: deadline)
        } catch let error as Error {
            throw error
        } catch let error as NotModifiedRefused {
            throw error
        } catch {
            throw Error.galleryUnavailable(url: url, reason: Self.reason(error))
        }
        let verified: FeedAuthenticator.Verified
        do {
            verified = try await authenticator.authenticate(status: Int(response.status.code), headers: response.headers, body: body, nonce: nonce)
        } catch {
            refuse(error)
            throw Error.unauthenticatedFeed(url: url, failure: error)
        }
        let bytes = Array(body.readableBytesView)
        // Refused before anything is recorded or stored: a feed this app will not use changes
        // neither the trust file (its newest signature, its accepted feeds) nor the stored feed.
        let entries = try decodeFeed(bytes)
        let outcome: FeedAuthenticator.Outcome
        do {
            outcome = try authenticator.record(verified)
        } catch {
            refuse(error)
            throw Error.unauthenticatedFeed(url: url, failure: error)
        }
        let responseTime = now()
        // The app's own record of what it authenticated: kept whatever the answer's unsigned
        // fields say (`no-store`, a long `max-age`), with the signed `ETag` and the validators
        // only; it is revalidated on the app's clock (``feedCheckInterval``), not the gallery's.
        var recorded: [(String, String)] = [("Cache-Control", "no-cache")]
        for name in ["ETag", "Last-Modified"] {
            if let value = response.headers.first(name: name) { recorded.append((name, value)) }
        }
        let headers = CacheHeaders(fields: recorded, requestTime: requestTime, responseTime: responseTime)
        let entry = Image(data: bytes, contentType: response.headers.first(name: "content-type") ?? "application/json", cacheHeaders: headers)
        await pipeline.store(image: entry, forKey: feedCacheKey(fingerprint: outcome.fingerprint))
        return FetchedFeed(
            bytes: bytes, key: FeedKey(fingerprint: outcome.fingerprint, trustedOnFirstUse: outcome.trustedOnFirstUse),
            origin: .downloaded, age: FeedAge(authenticatedAt: responseTime, expires: outcome.expires), entries: entries
        )
    }

    /// Counts a refused answer by its reason (on `/metrics`) and makes it the latest word.
    private func refuse(_ failure: SignatureFailure) {
        signatureFailures.update { $0[failure.reason, default: 0] += 1 }
        feedRefusal.update { $0 = failure }
    }

    /// Records where the feed in use came from, the key it was authenticated with (the same
    /// feed signed by a newly trusted key is the same bytes: the page named the old key until the
    /// feed changed), and when it was last authenticated.
    private func noteOrigin(_ fetched: FetchedFeed) {
        feedOrigin.update { $0 = fetched.origin }
        if feedKey.value != fetched.key { feedKey.update { $0 = fetched.key } }
        if let authenticatedAt = fetched.age.authenticatedAt { feedAuthenticatedAt = authenticatedAt }
        if feedAge.value != fetched.age { feedAge.update { $0 = fetched.age } }
        if case .notReauthenticated = fetched.origin {} else { feedRefusal.update { $0 = nil } }
    }

    /// The feed in `bytes`, if this app uses it: it decodes, it lists at most
    /// ``maxFeedEntries`` entries, and every image is at the gallery's own origin. A gallery
    /// serves its own images: an entry elsewhere would have the app fetch any URL the gallery
    /// names (another host, a port on this machine) and show a digest of it.
    private func decodeFeed(_ bytes: [UInt8]) throws -> [ImageFile] {
        let feed: [ImageFile]
        do {
            feed = try JSONDecoder().decode([ImageFile].self, from: Data(bytes))
        } catch {
            throw Error.invalidFeed(url: feedURL, reason: "\(error)")
        }
        guard feed.count <= Self.maxFeedEntries else {
            throw Error.invalidFeed(
                url: feedURL, reason: "it lists \(feed.count) entries, more than the \(Self.maxFeedEntries) the app takes; the whole feed is refused"
            )
        }
        let gallery = galleryURL.originKey.lowercased()
        if let (index, file) = feed.enumerated().first(where: { imageURL($1).originKey.lowercased() != gallery }) {
            throw Error.invalidFeed(
                url: feedURL,
                reason: "entry \(index) (\(file.url)) is not at the gallery's own origin \(gallery); the whole feed is refused"
            )
        }
        return feed
    }

    /// Decodes authenticated feed bytes and makes them the model's feed.
    @discardableResult
    private func adopt(_ fetched: FetchedFeed) throws -> [ImageFile] {
        let (bytes, key) = (fetched.bytes, fetched.key)
        let feed = try fetched.entries ?? decodeFeed(bytes)
        adoptedFeed = bytes
        feedEditions += 1
        noteOrigin(fetched)
        if key.trustedOnFirstUse {
            logger.notice("first contact with \(galleryURL.absoluteString): its feed key \(key.fingerprint) is trusted from now on; a different key will be refused until `emojiart trust --gallery \(galleryURL.absoluteString)`")
        }
        imageFeed = feed
        let byPiece = Dictionary(feed.compactMap { file in file.pieceNumber.map { ($0, file) } }) { first, _ in first }
        feedByPiece.update { $0 = byPiece }
        statuses = Array(repeating: .pending, count: feed.count)
        catalogEdits.add(1, ordering: .releasing)
        progress.update { $0 = VerificationProgress(total: feed.count) }
        return feed
    }
}
