public import AsyncHTTPClient
public import Foundation
import ImageCache
public import MessageSignatures
import HTTPCaching
import NIOCore
import NIOHTTP1
import Synchronization

/// Authenticates the gallery's feed as it arrives, before any entry is used: the signature's key
/// (pinned, remembered, or learnt on first use), its dates (not in the future, not expired, not
/// older than one already accepted from that gallery and key, a lifetime of at most a day), the
/// signature over the status, `ETag`, type, digest and the gallery's origin, and over this
/// request's nonce as this app sent it (so a recorded answer is refused), the signed origin
/// against ``galleryOrigin`` (so another gallery's feed is), and the digest over the body's
/// bytes. A 304 is authenticated too: signed by the key the stored feed was verified with, for
/// its `ETag`, for this request.
struct FeedAuthenticator: Sendable {
    let galleryURL: URL
    /// The origin the gallery's signed answers must name (`--gallery-origin`, by default the
    /// origin of ``galleryURL``), lowercase; the trust file keeps what was accepted under it.
    let galleryOrigin: String
    let trust: GalleryTrust
    let client: HTTPClient
    let now: @Sendable () -> Date
    /// The clock skew allowed between the gallery and this machine.
    let skew: TimeInterval = 60
    /// The pinned key as the gallery published it, once fetched and matched with the pin.
    private let pinnedKey = PinnedKey()

    init(galleryURL: URL, galleryOrigin: String? = nil, trust: GalleryTrust, client: HTTPClient, now: @escaping @Sendable () -> Date) {
        self.galleryURL = galleryURL
        self.galleryOrigin = TrustStore.canonical(galleryOrigin ?? galleryURL.originKey)
        self.trust = trust
        self.client = client
        self.now = now
    }

    /// A feed that passed.
    struct Outcome: Sendable, Hashable {
        /// The fingerprint of the key it was verified with.
        let fingerprint: String
        /// Whether that key was trusted just now, on first contact.
        let trustedOnFirstUse: Bool
        /// When the signature's life ends (its `expires`).
        let expires: Date
    }

    /// An answer whose signature, dates, origin and digest verified, not yet recorded: what
    /// ``record(_:)`` writes to the trust file once the caller's own checks of the feed pass too.
    /// Nothing is written before: a feed refused later (its entries, say) changes nothing stored.
    struct Verified: Sendable {
        /// What the feed is, once recorded.
        let outcome: Outcome
        /// The signature's `created`.
        let created: Date
        /// The identity of the feed signed or confirmed (``feedIdentity(etag:body:)``).
        let feedDigest: String
        /// The key learnt on first contact, to be trusted when recorded.
        let firstUseKey: JSONWebKey?
    }

    /// The fingerprint of the key a feed of this gallery must be signed with now, when one is
    /// known (pinned, or remembered from an earlier contact).
    /// - Throws: ``SignatureFailure/trustStore(_:)`` when the trust file cannot be read.
    func trustedFingerprint() throws(SignatureFailure) -> String? {
        switch trust {
        case let .pinned(fingerprint, _): return fingerprint
        case let .firstUse(store):
            do {
                return try store.key(for: galleryURL)?.thumbprint
            } catch {
                throw .trustStore(error.description)
            }
        }
    }

    /// Checks a feed response to a request that sent `nonce`, writing nothing: on first contact
    /// with a gallery (and no pin), the key it verified with is trusted by ``record(_:)``.
    func authenticate(status: Int, headers: HTTPHeaders, body: ByteBuffer, nonce: String) async throws(SignatureFailure) -> Verified {
        let field = Self.field(headers)
        let received = try Self.received(status: status, field: field, nonce: nonce)
        let key: JSONWebKey
        var firstUse: JSONWebKey?
        if let trusted = try await trustedKey(offeredBy: received) {
            key = trusted
        } else {
            key = try await publishedKey()
            guard key.thumbprint == received.keyID else { throw .unknownKey(expected: key.thumbprint, offered: received.keyID) }
            firstUse = key
        }
        try verify(received, status: status, field: field, nonce: nonce, key: key)
        try ContentDigest.verify(field("content-digest"), body: body.readableBytesView)
        // The feed's identity (its ETag as the cache keeps it, and its bytes) is recorded with the
        // signature's date: a stored copy is used later only while it is still this pair.
        let etag = CacheHeaders(fields: headers.map { ($0.name, $0.value) }, requestTime: .distantPast, responseTime: .distantPast).etag
        try refuseIfReplayed(received, fingerprint: key.thumbprint)
        return Verified(
            outcome: Outcome(fingerprint: key.thumbprint, trustedOnFirstUse: firstUse != nil, expires: received.expires),
            created: received.created, feedDigest: Self.feedIdentity(etag: etag, body: Array(body.readableBytesView)), firstUseKey: firstUse
        )
    }

    /// Checks a 304 to a request that sent `nonce`, writing nothing: signed (over `@status`,
    /// `ETag`, the origin and the nonce) by the key `fingerprint` the stored feed was verified
    /// with, which must still be the trusted one, for the stored feed's `etag`. Once recorded
    /// (``record(_:)``), the stored feed (its identity, `storedFeed`) is the newest accepted from
    /// this gallery and key.
    func authenticateNotModified(
        headers: HTTPHeaders, storedETag: String?, fingerprint: String, nonce: String, storedFeed: String
    ) async throws(SignatureFailure) -> Verified {
        let field = Self.field(headers)
        let received = try Self.received(status: 304, field: field, nonce: nonce)
        guard let key = try await trustedKey(offeredBy: received) else {
            throw .keyUnavailable("no key is trusted for \(galleryURL.absoluteString) any more")
        }
        // The stored feed was verified with another key than the one trusted now.
        guard key.thumbprint == fingerprint else { throw .changedKey(trusted: key.thumbprint, offered: fingerprint) }
        try verify(received, status: 304, field: field, nonce: nonce, key: key)
        let offered = field("etag")?.trimmingCharacters(in: .whitespaces) ?? ""
        guard let storedETag, offered == storedETag else { throw .etagMismatch(stored: storedETag ?? "none", offered: offered) }
        try refuseIfReplayed(received, fingerprint: key.thumbprint)
        return Verified(
            outcome: Outcome(fingerprint: key.thumbprint, trustedOnFirstUse: false, expires: received.expires),
            created: received.created, feedDigest: storedFeed, firstUseKey: nil
        )
    }

    /// Records an answer the caller accepted whole, in one write of the trust file: the key
    /// learnt on first contact (unless another was stored meanwhile: it wins), the signature as
    /// the newest from this gallery and key (unless a newer one was accepted meanwhile: a
    /// rollback), and the feed's identity with the end of its prices' life.
    /// - Throws: ``SignatureFailure/changedKey(trusted:offered:)``,
    ///   ``SignatureFailure/replayed(created:newest:)`` or ``SignatureFailure/trustStore(_:)``,
    ///   and then nothing was written.
    func record(_ verified: Verified) throws(SignatureFailure) -> Outcome {
        let acceptance = TrustStore.Acceptance(
            created: verified.created, fingerprint: verified.outcome.fingerprint, origin: galleryOrigin, skew: skew,
            feedDigest: verified.feedDigest,
            validUntil: EmojiArtModel.FeedAge(authenticatedAt: now(), expires: verified.outcome.expires).validUntil,
            firstUse: verified.firstUseKey.map { ($0, galleryURL) }
        )
        let verdict: TrustStore.Verdict
        do {
            verdict = try trust.store.accept(acceptance)
        } catch {
            throw .trustStore(error.description)
        }
        switch verdict {
        case .accepted: return verified.outcome
        case let .replayed(newest): throw .replayed(created: verified.created, newest: newest)
        // Another key was trusted meanwhile (`emojiart trust --key=...`): it wins.
        case let .keyChanged(trusted): throw .changedKey(trusted: trusted.thumbprint, offered: verified.outcome.fingerprint)
        }
    }

    /// The gallery's signature on an answer, found and checked for its shape: it must bind the
    /// answer to this request. An answer that echoes another nonce than `nonce` was signed for
    /// another request: a replay, said in those words rather than as a bad signature.
    private static func received(status: Int, field: (String) -> String?, nonce: String) throws(SignatureFailure) -> MessageSignature.Received {
        let received = try MessageSignature.received(status: status, field: field)
        if let echoed = field(FeedNonce.field)?.trimmingCharacters(in: .whitespaces), echoed != nonce {
            throw .notForThisRequest(sent: nonce, answered: echoed)
        }
        return received
    }

    /// Verifies `received` with `key` over the answer's fields and this request's `nonce` (the
    /// base's request line is rebuilt from what this app sent), then the signed origin.
    private func verify(
        _ received: MessageSignature.Received, status: Int, field: (String) -> String?, nonce: String, key: JSONWebKey
    ) throws(SignatureFailure) {
        try MessageSignature.verify(
            received, status: status, field: field, requestField: { $0 == FeedNonce.field ? nonce : nil },
            key: key.publicKey(), now: now(), skew: skew
        )
        let offered = field(MessageSignature.originField)?.trimmingCharacters(in: .whitespaces) ?? ""
        guard offered.lowercased() == galleryOrigin else { throw .wrongGallery(expected: galleryOrigin, offered: offered) }
    }

    /// What the trust file records of an accepted feed: the SHA-256 of its `ETag` (as the cache
    /// keeps it) and its body together. A stored copy must be an accepted pair: old bytes stored
    /// under the current `ETag`, which the gallery's signed 304 would confirm, are not one.
    static func feedIdentity(etag: String?, body: [UInt8]) -> String {
        SHA256Hex.digest(Array((etag ?? "").utf8) + [0x0A] + body)
    }

    /// Where `bytes` with `etag`, a feed stored under the key `fingerprint`, stand among the
    /// feeds this machine authenticated from this gallery with that key (the last the trust file
    /// recorded, with that very `ETag`): what every use of a stored feed checks first, since the
    /// cache directory may be written by others.
    /// - Throws: ``SignatureFailure/trustStore(_:)`` when the trust file cannot be read.
    func standing(ofFeed bytes: [UInt8], etag: String?, fingerprint: String) throws(SignatureFailure) -> TrustStore.FeedStanding {
        do {
            return try trust.store.standing(ofFeed: Self.feedIdentity(etag: etag, body: bytes), of: fingerprint, origin: galleryOrigin)
        } catch {
            throw .trustStore(error.description)
        }
    }

    /// Refuses a signature older, by more than the skew, than the newest accepted from this
    /// gallery with the same key (a rollback), reading the trust file only: ``record(_:)`` checks
    /// again as it writes, under the lock.
    private func refuseIfReplayed(_ received: MessageSignature.Received, fingerprint: String) throws(SignatureFailure) {
        let newest: Date?
        do {
            newest = try trust.store.newestSignature(of: fingerprint, origin: galleryOrigin)
        } catch {
            throw .trustStore(error.description)
        }
        if let newest, newest.timeIntervalSince1970 - Double(TrustStore.seconds(received.created)) > skew { throw .replayed(created: received.created, newest: newest) }
    }

    /// The key a signature must be made with, when one is known: the pinned key (fetched once), or
    /// the key remembered for this gallery; `nil` at first contact (no pin, nothing remembered).
    /// - Throws: ``SignatureFailure/unknownKey(expected:offered:)`` or
    ///   ``SignatureFailure/changedKey(trusted:offered:)`` when `received` names another key,
    ///   ``SignatureFailure/trustStore(_:)`` when the trust file cannot be read.
    private func trustedKey(offeredBy received: MessageSignature.Received) async throws(SignatureFailure) -> JSONWebKey? {
        switch trust {
        case let .pinned(fingerprint, _):
            guard received.keyID == fingerprint else { throw .unknownKey(expected: fingerprint, offered: received.keyID) }
            return try await pinned(fingerprint)
        case let .firstUse(store):
            let trusted: JSONWebKey?
            do {
                trusted = try store.key(for: galleryURL)
            } catch {
                throw .trustStore(error.description)
            }
            if let trusted, trusted.thumbprint != received.keyID {
                throw .changedKey(trusted: trusted.thumbprint, offered: received.keyID)
            }
            return trusted
        }
    }

    /// The pinned key as the gallery publishes it, fetched once and checked against the pin.
    private func pinned(_ fingerprint: String) async throws(SignatureFailure) -> JSONWebKey {
        if let key = pinnedKey.value, key.thumbprint == fingerprint { return key }
        let key = try await publishedKey()
        guard key.thumbprint == fingerprint else { throw .unknownKey(expected: fingerprint, offered: key.thumbprint) }
        pinnedKey.value = key
        return key
    }

    /// A field's value as a signature covers it: every line joined with ", ", `nil` when absent.
    private static func field(_ headers: HTTPHeaders) -> (String) -> String? {
        { name in
            let values = headers[name]
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }
    }

    /// `GET /gallery/key`: the gallery's public key as it publishes it.
    func publishedKey() async throws(SignatureFailure) -> JSONWebKey {
        try await GalleryKeys.published(by: galleryURL, client: client)
    }
}

/// The pinned key once fetched: the public key does not change while the pin stays.
private final class PinnedKey: Sendable {
    private let state = Mutex<JSONWebKey?>(nil)

    var value: JSONWebKey? {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}

/// The keys galleries publish.
public enum GalleryKeys {
    /// `GET /gallery/key` of the gallery at `galleryURL`: its public key as a JSON Web Key.
    /// - Throws: ``SignatureFailure/keyUnavailable(_:)``.
    public static func published(
        by galleryURL: URL, client: HTTPClient = EmojiArtModel.galleryClient
    ) async throws(SignatureFailure) -> JSONWebKey {
        let url = galleryURL.appendingPathComponent("gallery/key").absoluteString
        do {
            let deadline = ContinuousClock.now + .seconds(15)
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(15))
            guard response.status == .ok else { throw SignatureFailure.keyUnavailable("\(url) answered HTTP \(response.status.code)") }
            let body = try await response.body.collect(upTo: 64 * 1024, by: deadline)
            let key = try JSONDecoder().decode(JSONWebKey.self, from: Data(body.readableBytesView))
            _ = try key.publicKey()
            return key
        } catch let failure as SignatureFailure {
            throw failure
        } catch {
            throw .keyUnavailable("\(url): \(error)")
        }
    }
}
