import Foundation
import HTTPTypes
import Hummingbird
import MessageSignatures
import Synchronization

/// Signs the feed as it is sent: an RFC 9421 signature over `@status`, `ETag`, and for a 200
/// also `Content-Type` and `Content-Digest` (see `MessageSignature.signedComponents`), dated
/// now and valid for ``lifetime``. `Sendable`.
///
/// A signature's dates are whole seconds, so every answer of one second with the same status
/// and covered fields has the same signature base: it is signed once (Ed25519 costs tens of
/// microseconds, most of a feed answer's time) and the fields reused for the rest of that second.
struct FeedSigner: Sendable {
    let key: SigningKey
    let keyID: String
    let lifetime: Duration
    let now: @Sendable () -> Date
    private let recent = RecentSignatures()

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
        let fields = headers
        let field: (String) -> String? = { name in HTTPField.Name(name).flatMap { fields[$0] } }
        // What the signature base is made of besides the dates: field values hold no line breaks.
        let covered = "\(status)\n" + MessageSignature.signedComponents(forStatus: status).map { field($0) ?? "" }.joined(separator: "\n")
        let second = Int64(exactly: created.timeIntervalSince1970.rounded(.down))
        let signature: MessageSignature.Fields
        if let second, let kept = recent.signature(at: second, covering: covered) {
            signature = kept
        } else {
            let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
            signature = try MessageSignature.sign(
                status: status, field: field, key: key, keyID: keyID, created: created, expires: created.addingTimeInterval(seconds)
            )
            if let second { recent.keep(signature, at: second, covering: covered) }
        }
        headers[.signatureInput] = signature.signatureInput
        headers[.signature] = signature.signature
    }
}

/// The signatures made in the current second, by what they cover (a 200 and a 304 of the
/// current edition, at most a few during a revision). Thread-safe.
private final class RecentSignatures: Sendable {
    private let state = Mutex<(second: Int64, byCovered: [String: MessageSignature.Fields])>((.min, [:]))

    func signature(at second: Int64, covering covered: String) -> MessageSignature.Fields? {
        state.withLock { $0.second == second ? $0.byCovered[covered] : nil }
    }

    func keep(_ signature: MessageSignature.Fields, at second: Int64, covering covered: String) {
        state.withLock { state in
            if state.second != second || state.byCovered.count >= 8 { state = (second, [:]) }
            state.byCovered[covered] = signature
        }
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
