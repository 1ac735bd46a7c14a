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
/// older than one already accepted from that key, a lifetime of at most a day), the signature
/// over the status, `ETag`, type and digest, and the digest over the body's bytes. A 304 is
/// authenticated too: signed by the key the stored feed was verified with, for its `ETag`.
struct FeedAuthenticator: Sendable {
    let galleryURL: URL
    let trust: GalleryTrust
    let client: HTTPClient
    let now: @Sendable () -> Date
    /// The clock skew allowed between the gallery and this machine.
    let skew: TimeInterval = 60
    /// The pinned key as the gallery published it, once fetched and matched with the pin.
    private let pinnedKey = PinnedKey()

    init(galleryURL: URL, trust: GalleryTrust, client: HTTPClient, now: @escaping @Sendable () -> Date) {
        self.galleryURL = galleryURL
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

    /// Checks a feed response; on first contact with a gallery (and no pin), remembers its key
    /// once the feed verified with it, unless another was stored meanwhile.
    func authenticate(status: Int, headers: HTTPHeaders, body: ByteBuffer) async throws(SignatureFailure) -> Outcome {
        let field = Self.field(headers)
        let received = try MessageSignature.received(status: status, field: field)
        let key: JSONWebKey
        var firstUse: TrustStore?
        if let trusted = try await trustedKey(offeredBy: received) {
            key = trusted
        } else {
            key = try await publishedKey()
            guard key.thumbprint == received.keyID else { throw .unknownKey(expected: key.thumbprint, offered: received.keyID) }
            firstUse = trust.store
        }
        try MessageSignature.verify(received, status: status, field: field, key: key.publicKey(), now: now(), skew: skew)
        try ContentDigest.verify(field("content-digest"), body: body.readableBytesView)
        if let store = firstUse {
            let stored: JSONWebKey
            do {
                stored = try store.trustOnFirstUse(key, for: galleryURL)
            } catch {
                throw .trustStore(error.description)
            }
            // Another key was trusted meanwhile (`emojiart trust --key=...`): it wins.
            guard stored.thumbprint == key.thumbprint else { throw .changedKey(trusted: stored.thumbprint, offered: key.thumbprint) }
        }
        // The feed's identity (its ETag as the cache keeps it, and its bytes) is recorded with the
        // signature's date: a stored copy is used later only while it is still this pair.
        let etag = CacheHeaders(fields: headers.map { ($0.name, $0.value) }, requestTime: .distantPast, responseTime: .distantPast).etag
        try acceptNotReplayed(received, fingerprint: key.thumbprint, feedDigest: Self.feedIdentity(etag: etag, body: Array(body.readableBytesView)))
        return Outcome(fingerprint: key.thumbprint, trustedOnFirstUse: firstUse != nil)
    }

    /// Checks a 304: signed (over `@status` and `ETag`) by the key `fingerprint` the stored feed
    /// was verified with, which must still be the trusted one, for the stored feed's `etag`.
    func authenticateNotModified(headers: HTTPHeaders, storedETag: String?, fingerprint: String) async throws(SignatureFailure) -> Outcome {
        let field = Self.field(headers)
        let received = try MessageSignature.received(status: 304, field: field)
        guard let key = try await trustedKey(offeredBy: received) else {
            throw .keyUnavailable("no key is trusted for \(galleryURL.absoluteString) any more")
        }
        // The stored feed was verified with another key than the one trusted now.
        guard key.thumbprint == fingerprint else { throw .changedKey(trusted: key.thumbprint, offered: fingerprint) }
        try MessageSignature.verify(received, status: 304, field: field, key: key.publicKey(), now: now(), skew: skew)
        let offered = field("etag")?.trimmingCharacters(in: .whitespaces) ?? ""
        guard let storedETag, offered == storedETag else { throw .etagMismatch(stored: storedETag ?? "none", offered: offered) }
        try acceptNotReplayed(received, fingerprint: key.thumbprint)
        return Outcome(fingerprint: key.thumbprint, trustedOnFirstUse: false)
    }

    /// What the trust file records of an accepted feed: the SHA-256 of its `ETag` (as the cache
    /// keeps it) and its body together. A stored copy must be an accepted pair: old bytes stored
    /// under the current `ETag`, which the gallery's signed 304 would confirm, are not one.
    static func feedIdentity(etag: String?, body: [UInt8]) -> String {
        SHA256Hex.digest(Array((etag ?? "").utf8) + [0x0A] + body)
    }

    /// Whether `bytes` with `etag`, a feed stored under the key `fingerprint`, are a feed this
    /// machine authenticated with that key (one of the last the trust file recorded, with that
    /// very `ETag`): what every use of a stored feed checks first, since the cache directory may
    /// be written by others.
    /// - Throws: ``SignatureFailure/trustStore(_:)`` when the trust file cannot be read.
    func isAuthenticatedFeed(_ bytes: [UInt8], etag: String?, fingerprint: String) throws(SignatureFailure) -> Bool {
        do {
            return try trust.store.acceptedFeed(Self.feedIdentity(etag: etag, body: bytes), of: fingerprint)
        } catch {
            throw .trustStore(error.description)
        }
    }

    /// Refuses a signature older, by more than the skew, than the newest accepted from the same
    /// key (a replay, a rollback), and remembers this one if it is the newest, with the identity
    /// of the feed it signed (`feedDigest`, ``feedIdentity(etag:body:)``, for a 200), in the
    /// same write.
    private func acceptNotReplayed(_ received: MessageSignature.Received, fingerprint: String, feedDigest: String? = nil) throws(SignatureFailure) {
        let newer: Date?
        do {
            newer = try trust.store.acceptSignature(created: received.created, of: fingerprint, skew: skew, feedDigest: feedDigest)
        } catch {
            throw .trustStore(error.description)
        }
        if let newer { throw .replayed(created: received.created, newest: newer) }
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
