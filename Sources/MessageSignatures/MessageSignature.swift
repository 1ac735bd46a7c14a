public import Crypto
public import Foundation
import RawStructuredFieldValues

/// RFC 9421 HTTP Message Signatures with `ed25519`, for responses: the gallery signs its feed,
/// the app verifies it. Only what EmojiArt needs: response components (`@status` and header
/// fields), the parameters `created`, `expires`, `keyid` and `alg`; of several signatures on one
/// message, only the one labelled ``label`` is used.
///
/// The signature base, as RFC 9421 §2.5 builds it, one line per covered component and then the
/// parameters, joined by newlines:
///
/// ```
/// "@status": 200
/// "etag": "..."
/// "content-type": application/json; charset=utf-8
/// "content-digest": sha-256=:...:
/// "@signature-params": ("@status" "etag" "content-type" "content-digest");created=...;expires=...;keyid="...";alg="ed25519"
/// ```
///
/// `Signature-Input` and `Signature` are RFC 8941 dictionaries, written and parsed with
/// swift-http-structured-headers.
public enum MessageSignature {
    /// What a 200's signature must cover for EmojiArt to accept it: the status, the type and the
    /// digest of the body (so, through the digest, every byte of it). The gallery covers `etag`
    /// too; a feed from a gallery that did not is still accepted.
    public static let requiredComponents = ["@status", "content-type", "content-digest"]
    /// What a 304's signature must cover: the status and the `ETag` it confirms (a 304 has no
    /// body, so no type or digest).
    public static let requiredNotModifiedComponents = ["@status", "etag"]
    /// The label EmojiArt signs under, and the only one it verifies: other signatures on the
    /// same answer (a proxy's, say) are ignored.
    public static let label = "feed"
    /// The longest lifetime (`expires - created`) a signature may claim: 24 hours.
    public static let maximumLifetime: TimeInterval = 86_400
    /// The most components a signature may cover: the gallery covers 4. Each covered field is a
    /// line of the signature base, so a forged list naming one long field thousands of times
    /// made a base of 180 MB, built before the signature could be checked.
    public static let maximumCoveredComponents = 16

    /// What a signature on an answer with `status` must cover: ``requiredNotModifiedComponents``
    /// for a 304, ``requiredComponents`` otherwise.
    public static func requiredComponents(forStatus status: Int) -> [String] {
        status == 304 ? requiredNotModifiedComponents : requiredComponents
    }

    /// What the gallery covers when it signs an answer with `status`: `@status` and `etag`, and
    /// for anything but a 304 also `content-type` and `content-digest`.
    public static func signedComponents(forStatus status: Int) -> [String] {
        status == 304 ? requiredNotModifiedComponents : ["@status", "etag", "content-type", "content-digest"]
    }

    /// The two header fields of a signature.
    public struct Fields: Sendable, Hashable {
        /// `Signature-Input`.
        public var signatureInput: String
        /// `Signature`.
        public var signature: String
    }

    /// Signs a response.
    /// - Parameters:
    ///   - field: the value of each covered header field (lowercase name).
    ///   - components: what the signature covers; by default ``signedComponents(forStatus:)``.
    ///   - keyID: the signing key's fingerprint (its JWK thumbprint).
    ///   - label: the signature's label; ``label`` unless a test signs as someone else.
    public static func sign(
        status: Int, field: (String) -> String?, components: [String]? = nil,
        key: SigningKey, keyID: String, created: Date, expires: Date, label: String = label
    ) throws(SignatureFailure) -> Fields {
        guard let createdSeconds = Int64(exactly: created.timeIntervalSince1970.rounded(.down)),
              let expiresSeconds = Int64(exactly: expires.timeIntervalSince1970.rounded(.down))
        else { throw .missingSignature("the signature's dates are out of range") }
        let parameters: OrderedMap<String, RFC9651BareItem> = [
            "created": .integer(createdSeconds),
            "expires": .integer(expiresSeconds),
            "keyid": .string(keyID),
            "alg": .string("ed25519"),
        ]
        var items = BareInnerList()
        for component in components ?? signedComponents(forStatus: status) {
            items.append(Item(bareItem: RFC9651BareItem.string(component), parameters: [:]))
        }
        let covered = InnerList(bareInnerList: items, parameters: parameters)
        let base = try signatureBase(status: status, field: field, covered: covered)
        guard let signature = try? key.privateKey.signature(for: Data(base.utf8)) else { throw .badSignature }
        var serializer = StructuredFieldValueSerializer()
        guard let input = try? serializer.writeDictionaryFieldValue([label: .innerList(covered)]),
              let value = try? serializer.writeDictionaryFieldValue([
                  label: .item(Item(bareItem: RFC9651BareItem.undecodedByteSequence(signature.base64EncodedString()), parameters: [:])),
              ])
        else { throw .missingSignature("could not serialize the signature") }
        return Fields(signatureInput: String(decoding: input, as: UTF8.self), signature: String(decoding: value, as: UTF8.self))
    }

    /// A signature as received, before it is checked.
    public struct Received: Sendable {
        /// The key the signer names (`keyid`).
        public var keyID: String
        /// `created`.
        public var created: Date
        /// `expires`.
        public var expires: Date
        let covered: InnerList
        let signature: Data
    }

    /// Finds the signature labelled ``label`` in a response's fields and checks its shape: made
    /// with `ed25519`, covering ``requiredComponents(forStatus:)``, with `keyid`, `created` and
    /// `expires`. Signatures under other labels are ignored, so one a proxy adds does not hide
    /// the gallery's.
    /// - Throws: ``SignatureFailure/missingSignature(_:)`` saying what is missing.
    public static func received(status: Int, field: (String) -> String?) throws(SignatureFailure) -> Received {
        guard let inputField = field("signature-input"), let signatureField = field("signature") else {
            throw .missingSignature("no Signature-Input and Signature fields")
        }
        var inputParser = StructuredFieldValueParser(Array(inputField.utf8))
        var signatureParser = StructuredFieldValueParser(Array(signatureField.utf8))
        guard let inputs = try? inputParser.parseDictionaryFieldValue(),
              let signatures = try? signatureParser.parseDictionaryFieldValue()
        else { throw .missingSignature("Signature-Input or Signature is not a structured dictionary") }
        guard let member = inputs[label] else { throw .missingSignature("no signature labelled \(label)") }
        guard case let .innerList(covered) = member,
              case let .item(signatureItem)? = signatures[label],
              case let .undecodedByteSequence(encoded) = signatureItem.rfc9651BareItem,
              let signature = Data(base64Encoded: encoded)
        else { throw .missingSignature("the \(label) signature is not an inner list with a byte sequence") }
        // Before any field is looked up: RFC 9421 2.5 forbids a component covered twice.
        guard covered.bareInnerList.count <= maximumCoveredComponents else {
            throw .missingSignature("the \(label) signature covers \(covered.bareInnerList.count) components, more than the \(maximumCoveredComponents) read")
        }
        let names = covered.bareInnerList.compactMap { item -> String? in
            if case let .string(name) = item.rfc9651BareItem { name } else { nil }
        }
        guard Set(names).count == names.count else {
            throw .missingSignature("the \(label) signature covers a component more than once")
        }
        let required = requiredComponents(forStatus: status)
        guard Set(required).isSubset(of: names) else {
            throw .missingSignature("the \(label) signature does not cover \(required.joined(separator: ", "))")
        }
        let parameters = covered.rfc9651Parameters
        guard case .string("ed25519")? = parameters["alg"] else { throw .missingSignature("the \(label) signature is not made with alg ed25519") }
        guard case let .string(keyID)? = parameters["keyid"],
              case let .integer(created)? = parameters["created"],
              case let .integer(expires)? = parameters["expires"]
        else { throw .missingSignature("the \(label) signature lacks keyid, created or expires") }
        return Received(
            keyID: keyID, created: Date(timeIntervalSince1970: TimeInterval(created)),
            expires: Date(timeIntervalSince1970: TimeInterval(expires)), covered: covered, signature: signature
        )
    }

    /// Checks a received signature: its dates at `now` (allowing `skew` for clocks that differ:
    /// not made in the future, not expired, a lifetime of at most `maximumLifetime`), then the
    /// signature over the fields as received.
    /// - Throws: ``SignatureFailure/notYetValid(created:now:)``,
    ///   ``SignatureFailure/lifetimeTooLong(seconds:maximum:)``,
    ///   ``SignatureFailure/expired(expires:now:)`` or ``SignatureFailure/badSignature``.
    public static func verify(
        _ received: Received, status: Int, field: (String) -> String?, key: Curve25519.Signing.PublicKey,
        now: Date, skew: TimeInterval = 60, maximumLifetime: TimeInterval = maximumLifetime
    ) throws(SignatureFailure) {
        if received.created.timeIntervalSince(now) > skew { throw .notYetValid(created: received.created, now: now) }
        let lifetime = received.expires.timeIntervalSince(received.created)
        guard lifetime >= 0, lifetime <= maximumLifetime else {
            // Both are whole seconds from 64-bit integers, so their difference is finite; clamp
            // before converting so no value can trap.
            let seconds = Int64(exactly: max(-9e15, min(9e15, lifetime.rounded(.down)))) ?? 0
            throw .lifetimeTooLong(seconds: seconds, maximum: Int64(maximumLifetime))
        }
        if now.timeIntervalSince(received.expires) > skew { throw .expired(expires: received.expires, now: now) }
        let base = try signatureBase(status: status, field: field, covered: received.covered)
        guard key.isValidSignature(received.signature, for: Data(base.utf8)) else { throw .badSignature }
    }

    /// The RFC 9421 signature base for a response.
    static func signatureBase(status: Int, field: (String) -> String?, covered: InnerList) throws(SignatureFailure) -> String {
        var lines: [String] = []
        for item in covered.bareInnerList {
            guard case let .string(name) = item.rfc9651BareItem, item.rfc9651Parameters.count == 0 else {
                throw .missingSignature("a covered component EmojiArt does not know")
            }
            switch name {
            case "@status":
                lines.append("\"@status\": \(status)")
            case _ where !name.hasPrefix("@"):
                guard let value = field(name) else { throw .missingSignature("the response has no \(name) field to cover") }
                lines.append("\"\(name)\": \(value.trimmingCharacters(in: .whitespaces))")
            default:
                throw .missingSignature("the component \(name) does not apply to a response")
            }
        }
        var serializer = StructuredFieldValueSerializer()
        guard let parameters = try? serializer.writeListFieldValue([.innerList(covered)]) else {
            throw .missingSignature("the signature parameters do not serialize")
        }
        lines.append("\"@signature-params\": " + String(decoding: parameters, as: UTF8.self))
        return lines.joined(separator: "\n")
    }
}
