import Foundation
import HTTPTypes
import Hummingbird
import MessageSignatures

/// Signs the feed as it is sent: an RFC 9421 signature over `@status`, `ETag`, and for a 200
/// also `Content-Type` and `Content-Digest` (see `MessageSignature.signedComponents`), dated
/// now and valid for ``lifetime``. `Sendable`; signing takes tens of microseconds, so each answer gets a fresh one.
struct FeedSigner: Sendable {
    let key: SigningKey
    let keyID: String
    let lifetime: Duration
    let now: @Sendable () -> Date

    init(key: SigningKey, lifetime: Duration, now: @escaping @Sendable () -> Date) {
        self.key = key
        keyID = key.fingerprint
        self.lifetime = lifetime
        self.now = now
    }

    /// Adds `Signature-Input` and `Signature` to the answer with `status` whose fields are
    /// `headers`, which hold the covered fields.
    func sign(status: Int, _ headers: inout HTTPFields) throws {
        let created = now()
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        let fields = headers
        let signature = try MessageSignature.sign(
            status: status, field: { name in HTTPField.Name(name).flatMap { fields[$0] } },
            key: key, keyID: keyID, created: created, expires: created.addingTimeInterval(seconds)
        )
        headers[.signatureInput] = signature.signatureInput
        headers[.signature] = signature.signature
    }
}

extension HTTPField.Name {
    /// RFC 9530.
    static let contentDigest = Self("Content-Digest")!
    /// RFC 9421.
    static let signatureInput = Self("Signature-Input")!
    /// RFC 9421.
    static let signature = Self("Signature")!
}
