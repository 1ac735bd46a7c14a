public import Foundation

/// Why a signed message (the gallery's feed) could not be authenticated. Each case says what
/// happened; ``description`` also says what to do.
public enum SignatureFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// No `Signature-Input` / `Signature` pair, or none made with `ed25519` over the components
    /// that must be covered.
    case missingSignature(String)
    /// The signature does not verify with the trusted key over what was received.
    case badSignature
    /// Signed by a key other than the trusted one.
    case changedKey(trusted: String, offered: String)
    /// A key pinned by fingerprint (`--gallery-key`) is not the gallery's key.
    case unknownKey(expected: String, offered: String)
    /// The signature's lifetime is over.
    case expired(expires: Date, now: Date)
    /// No `Content-Digest` with `sha-256`.
    case missingDigest
    /// The body's SHA-256 is not the one in `Content-Digest`.
    case digestMismatch
    /// The key could not be fetched or read.
    case keyUnavailable(String)
    /// The signature says it was made after now (beyond the clock skew allowed).
    case notYetValid(created: Date, now: Date)
    /// The signature's lifetime (`expires - created`) is longer than a feed's may be.
    case lifetimeTooLong(seconds: Int64, maximum: Int64)
    /// The signature is older than one already accepted with the same key (beyond the clock
    /// skew allowed): an older answer replayed, a rollback.
    case replayed(created: Date, newest: Date)
    /// A 304's signed `ETag` is not the one of the stored feed it claims is current.
    case etagMismatch(stored: String, offered: String)
    /// The record of trusted keys could not be used; the text names the file and what to do.
    case trustStore(String)
    /// The feed stored for `gallery` is not one this machine authenticated (its SHA-256 is not
    /// among those the trust file recorded): it was changed on disk, or stored by an older
    /// build. It is not used.
    case storedFeedUnknown(gallery: String)
    /// The signature does not cover the request's nonce (`"emojiart-feed-nonce";req`): the
    /// answer is not bound to the request it answers, so it could be a recorded one. Galleries
    /// sign every answer to a request with a nonce over it; one that does not is too old.
    case unboundAnswer
    /// The answer says it was signed for the nonce `answered`, not the `sent` one of this
    /// request: a recorded answer replayed. Reported as `replayed`.
    case notForThisRequest(sent: String, answered: String)
    /// The signed origin field names `offered`, not the gallery this app asks (`expected`,
    /// `--gallery-origin`): another gallery's feed, signed with the same key.
    case wrongGallery(expected: String, offered: String)
    /// The feed stored for `gallery` is one this machine authenticated, but not the newest it
    /// accepted from that origin and key: offline (or without a confirmation), an older
    /// catalog is not used.
    case storedFeedSuperseded(gallery: String)

    /// A short, stable name for metrics labels: `bad_signature`, `expired`, ...
    public var reason: String {
        switch self {
        case .missingSignature: "missing_signature"
        case .badSignature: "bad_signature"
        case .changedKey: "changed_key"
        case .unknownKey: "unknown_key"
        case .expired: "expired"
        case .missingDigest: "missing_digest"
        case .digestMismatch: "digest_mismatch"
        case .keyUnavailable: "key_unavailable"
        case .notYetValid: "not_yet_valid"
        case .lifetimeTooLong: "lifetime_too_long"
        case .replayed: "replayed"
        case .etagMismatch: "etag_mismatch"
        case .trustStore: "trust_store"
        case .storedFeedUnknown: "stored_feed_unknown"
        case .unboundAnswer: "unbound_answer"
        case .notForThisRequest: "replayed"
        case .wrongGallery: "wrong_gallery"
        case .storedFeedSuperseded: "stored_feed_superseded"
        }
    }

    public var description: String {
        switch self {
        case let .missingSignature(detail):
            "the feed is not signed (\(detail)): it may have been altered on the way; check that --gallery names the gallery itself, not a proxy"
        case .badSignature:
            "the feed's signature does not verify with the gallery's key: the feed was altered on the way"
        case let .changedKey(trusted, offered):
            "the feed is signed by key \(offered), but this machine trusts key \(trusted) for this gallery: if the gallery rotated its key on purpose, run `emojiart trust --gallery URL` to accept the new one"
        case let .unknownKey(expected, offered):
            "the gallery's key is \(offered), not the pinned \(expected): check --gallery-key"
        case let .expired(expires, now):
            "the feed's signature expired at \(Self.format(expires)) (now \(Self.format(now))): an old feed was replayed, or a clock is wrong"
        case .missingDigest:
            "the feed has no sha-256 Content-Digest for its signature to cover"
        case .digestMismatch:
            "the feed's bytes do not match its signed Content-Digest: the feed was altered on the way"
        case let .keyUnavailable(detail):
            "the gallery's public key could not be had (\(detail)): is --gallery an EmojiArt gallery?"
        case let .notYetValid(created, now):
            "the feed's signature says it was made at \(Self.format(created)), after now (\(Self.format(now))): check this machine's clock and the gallery's"
        case let .lifetimeTooLong(seconds, maximum):
            "the feed's signature is valid for \(seconds) s, longer than the \(maximum) s a feed's signature may be: a signature that lives that long could be replayed for too long"
        case let .replayed(created, newest):
            "the feed's signature was made at \(Self.format(created)), before one already accepted from this gallery's key (\(Self.format(newest))): an older answer was replayed (a rollback), or the gallery's clock went back"
        case let .etagMismatch(stored, offered):
            "the gallery said the feed is unchanged (304) for ETag \(offered), but the stored feed's ETag is \(stored): the stored copy is not confirmed"
        case let .trustStore(detail):
            "the trusted gallery keys could not be used: \(detail)"
        case let .storedFeedUnknown(gallery):
            "the stored catalog of \(gallery) does not match any feed this machine authenticated: it was changed on disk; run once with the gallery reachable"
        case .unboundAnswer:
            "the gallery's answer is not bound to this request (its signature does not cover the request's \(FeedNonce.field) field): the gallery is too old for this app, or the answer was recorded for another request; upgrade the gallery"
        case let .notForThisRequest(sent, answered):
            "the gallery's answer was signed for another request (nonce \(answered.prefix(48)), not this request's \(sent)): a recorded answer was replayed; nothing from it is used"
        case let .wrongGallery(expected, offered):
            "the feed is signed for the gallery at \(offered.prefix(200)), not \(expected): another gallery's feed (signed with the same key) was handed out in its place; if \(expected) is not the gallery's public origin, pass --gallery-origin"
        case let .storedFeedSuperseded(gallery):
            "the stored catalog of \(gallery) is older than the newest feed this machine authenticated from it: it is not used; run once with the gallery reachable"
        }
    }

    private static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
