public import Crypto
public import Foundation
import RawStructuredFieldValues

/// RFC 9421 HTTP Message Signatures with `ed25519`, for responses: the gallery signs its feed,
/// the app verifies it. Only what EmojiArt needs: response components (`@status` and header
/// fields), the parameters `created`, `expires`, `keyid` and `alg`, one signature per message.
///
/// The signature base, as RFC 9421 §2.5 builds it, one line per covered component and then the
/// parameters, joined by newlines:
///
/// ```
/// "@status": 200
/// "content-type": application/json; charset=utf-8
/// "content-digest": sha-256=:...:
/// "@signature-params": ("@status" "content-type" "content-digest");created=...;expires=...;keyid="...";alg="ed25519"
/// ```
///
/// `Signature-Input` and `Signature` are RFC 8941 dictionaries, written and parsed with
/// swift-http-structured-headers.
public enum MessageSignature {
    /// What a response signature must cover for EmojiArt to accept it: the status, the type and
    /// the digest of the body (so, through the digest, every byte of it).
    public static let requiredComponents = ["@status", "content-type", "content-digest"]
    /// The label EmojiArt signs under.
    public static let label = "feed"

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
    ///   - keyID: the signing key's fingerprint (its JWK thumbprint).
    public static func sign(
        status: Int, field: (String) -> String?, components: [String] = requiredComponents,
        key: SigningKey, keyID: String, created: Date, expires: Date
    ) throws(SignatureFailure) -> Fields {
        let parameters: OrderedMap<String, RFC9651BareItem> = [
            "created": .integer(Int64(created.timeIntervalSince1970.rounded(.down))),
            "expires": .integer(Int64(expires.timeIntervalSince1970.rounded(.down))),
            "keyid": .string(keyID),
            "alg": .string("ed25519"),
        ]
        var items = BareInnerList()
        for component in components { items.append(Item(bareItem: RFC9651BareItem.string(component), parameters: [:])) }
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
        /// `created`, when given.
        public var created: Date?
        /// `expires`.
        public var expires: Date
        let covered: InnerList
        let signature: Data
    }

    /// Finds the signature EmojiArt accepts in a response's fields: one made with `ed25519`
    /// that covers ``requiredComponents`` and has `keyid` and `expires`.
    /// - Throws: ``SignatureFailure/missingSignature(_:)`` saying what is missing.
    public static func received(field: (String) -> String?) throws(SignatureFailure) -> Received {
        guard let inputField = field("signature-input"), let signatureField = field("signature") else {
            throw .missingSignature("no Signature-Input and Signature fields")
        }
        var inputParser = StructuredFieldValueParser(Array(inputField.utf8))
        var signatureParser = StructuredFieldValueParser(Array(signatureField.utf8))
        guard let inputs = try? inputParser.parseDictionaryFieldValue(),
              let signatures = try? signatureParser.parseDictionaryFieldValue()
        else { throw .missingSignature("Signature-Input or Signature is not a structured dictionary") }
        for (label, member) in inputs {
            guard case let .innerList(covered) = member,
                  case let .item(signatureItem)? = signatures[label],
                  case let .undecodedByteSequence(encoded) = signatureItem.rfc9651BareItem,
                  let signature = Data(base64Encoded: encoded)
            else { continue }
            let names = covered.bareInnerList.compactMap { item -> String? in
                if case let .string(name) = item.rfc9651BareItem { name } else { nil }
            }
            let parameters = covered.rfc9651Parameters
            guard Set(requiredComponents).isSubset(of: names),
                  case .string("ed25519")? = parameters["alg"],
                  case let .string(keyID)? = parameters["keyid"],
                  case let .integer(expires)? = parameters["expires"]
            else { continue }
            var created: Date?
            if case let .integer(seconds)? = parameters["created"] { created = Date(timeIntervalSince1970: TimeInterval(seconds)) }
            return Received(
                keyID: keyID, created: created, expires: Date(timeIntervalSince1970: TimeInterval(expires)),
                covered: covered, signature: signature
            )
        }
        throw .missingSignature("no ed25519 signature with keyid and expires covering \(requiredComponents.joined(separator: ", "))")
    }

    /// Checks a received signature: its lifetime at `now` (allowing `skew` for clocks that
    /// differ), then the signature over the fields as received.
    /// - Throws: ``SignatureFailure/expired(expires:now:)`` or ``SignatureFailure/badSignature``.
    public static func verify(
        _ received: Received, status: Int, field: (String) -> String?, key: Curve25519.Signing.PublicKey,
        now: Date, skew: TimeInterval = 60
    ) throws(SignatureFailure) {
        if now.timeIntervalSince(received.expires) > skew { throw .expired(expires: received.expires, now: now) }
        if let created = received.created, created.timeIntervalSince(now) > skew {
            throw .expired(expires: received.expires, now: now)
        }
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
