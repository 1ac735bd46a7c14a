import Foundation
import HTTPCaching
import HTTPTypes
import Hummingbird
import MessageSignatures
import Synchronization

/// Signs each feed answer as it is sent, freshly every time: an RFC 9421 signature over
/// `@status`, `ETag`, the gallery's origin (`EmojiArt-Gallery-Origin`), for a 200 also
/// `Content-Type` and `Content-Digest`, and the request's nonce (`"emojiart-feed-nonce";req`)
/// when the request sent one (see `MessageSignature.signedComponents(forStatus:bound:)`), dated
/// now and valid for ``lifetime``. `Sendable`.
///
/// No signature is reused: each answers one request, so one recorded cannot answer another.
struct FeedSigner: Sendable {
    let key: SigningKey
    let keyID: String
    let lifetime: Duration
    let origin: GalleryOrigin
    let now: @Sendable () -> Date

    init(key: SigningKey, lifetime: Duration, origin: GalleryOrigin, now: @escaping @Sendable () -> Date) {
        self.key = key
        keyID = key.fingerprint
        self.lifetime = lifetime
        self.origin = origin
        self.now = now
    }

    /// Adds the gallery's origin, the request's nonce (echoed, so an app can tell a replayed
    /// answer from an altered one), `Signature-Input` and `Signature` to the answer with
    /// `status` whose fields are `headers`, which hold the other covered fields.
    /// - Parameter nonce: the request's well-formed ``FeedNonce``, `nil` when it sent none
    ///   (the answer is then signed unbound, and no app accepts it: a browser's or curl's).
    func sign(status: Int, _ headers: inout HTTPFields, nonce: String?) throws {
        let created = now()
        headers[.galleryOrigin] = origin.value
        if let nonce { headers[.feedNonce] = nonce }
        let fields = headers
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        let signature = try MessageSignature.sign(
            status: status, field: { name in HTTPField.Name(name).flatMap { fields[$0] } },
            requestField: { name in name == FeedNonce.field ? nonce : nil },
            key: key, keyID: keyID, created: created, expires: created.addingTimeInterval(seconds)
        )
        headers[.signatureInput] = signature.signatureInput
        headers[.signature] = signature.signature
    }
}

/// The gallery's public origin (`http://host:port`), as its feed answers name it: the one
/// configured (``GalleryConfiguration/publicOrigin``), else its bound address, known once the
/// server listens (a port of 0 is picked then). Thread-safe.
final class GalleryOrigin: Sendable {
    private let state: Mutex<String>
    /// Whether the origin was configured, so the bound address does not replace it.
    let configured: Bool

    init(configured: String?, host: String, port: Int) {
        self.configured = configured != nil
        state = Mutex(configured ?? URL.origin(host: host, port: port))
    }

    /// The origin the feed answers name now.
    var value: String { state.withLock { $0 } }

    /// The server listens on `port` of `host`: the origin, unless configured.
    func bound(host: String, port: Int) {
        guard !configured else { return }
        state.withLock { $0 = URL.origin(host: host, port: port) }
    }
}

extension HTTPField.Name {
    /// RFC 9530.
    static let contentDigest = Self("Content-Digest")!
    /// RFC 9421.
    static let signatureInput = Self("Signature-Input")!
    /// RFC 9421.
    static let signature = Self("Signature")!
    /// The gallery's public origin, signed on every feed answer.
    static let galleryOrigin = Self("EmojiArt-Gallery-Origin")!
    /// The app's nonce for one feed request (`FeedNonce`), echoed on its answer.
    static let feedNonce = Self("EmojiArt-Feed-Nonce")!
}
