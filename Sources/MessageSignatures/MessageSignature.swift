public import Crypto
public import Foundation
import RawStructuredFieldValues

/// RFC 9421 HTTP Message Signatures with `ed25519`, for responses: the gallery signs its feed,
/// the app verifies it. Only what EmojiArt needs: response components (`@status` and header
/// fields), request fields named in a response's signature (`"<field>";req`, RFC 9421 §2.4),
/// the parameters `created`, `expires`, `keyid` and `alg`; of several signatures on one
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
/// "emojiart-gallery-origin": http://127.0.0.1:8080
/// "emojiart-feed-nonce";req: <the request's nonce>
/// "@signature-params": ("@status" "etag" "content-type" "content-digest" "emojiart-gallery-origin" "emojiart-feed-nonce";req);created=...;expires=...;keyid="...";alg="ed25519"
/// ```
///
/// The last two bind the answer: to the gallery that gave it (``originField``) and to the
/// request that asked for it (``FeedNonce``), so neither a recorded answer nor another
/// gallery's is accepted.
///
/// `Signature-Input` and `Signature` are RFC 8941 dictionaries, written and parsed with
/// swift-http-structured-headers.
public enum MessageSignature {
    /// One covered component: a response's derived component (`@status`) or field, or, with
    /// ``fromRequest``, a field of the request the response answers (`"<field>";req`).
    public struct Component: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The component's name: `@status`, or a lowercase field name.
        public var name: String
        /// Whether the field is the request's (`;req`), not the response's.
        public var fromRequest: Bool

        /// A component named `name`, of the response unless `fromRequest`.
        public init(_ name: String, fromRequest: Bool = false) {
            self.name = name
            self.fromRequest = fromRequest
        }

        /// A response's component, by name.
        public init(stringLiteral name: String) {
            self.init(name)
        }

        /// The request's field `name`, as a response's signature covers it (`"name";req`).
        public static func request(_ name: String) -> Component {
            Component(name, fromRequest: true)
        }

        /// As `Signature-Input` writes it: `"name"` or `"name";req`.
        public var description: String {
            "\"\(name)\"" + (fromRequest ? ";req" : "")
        }
    }

    /// The signed response field naming the gallery's public origin (`http://host:port`): the
    /// app compares it with the origin it meant to ask (`--gallery-origin`), so a feed signed by
    /// the same key for another gallery is refused. Not `@authority`: the gallery would sign
    /// whatever `Host` a proxy forwards.
    public static let originField = "emojiart-gallery-origin"
    /// The request's nonce as a response's signature covers it: `"emojiart-feed-nonce";req`.
    public static let requestNonce = Component.request(FeedNonce.field)
    /// What a 200's signature must cover for EmojiArt to accept it: the status, the type and the
    /// digest of the body (so, through the digest, every byte of it), the gallery's origin and
    /// the request's nonce. The gallery covers `etag` too; a feed from a gallery that did not is
    /// still accepted.
    public static let requiredComponents: [Component] = ["@status", "content-type", "content-digest", Component(originField), requestNonce]
    /// What a 304's signature must cover: the status and the `ETag` it confirms (a 304 has no
    /// body, so no type or digest), the gallery's origin and the request's nonce.
    public static let requiredNotModifiedComponents: [Component] = ["@status", "etag", Component(originField), requestNonce]
    /// The label EmojiArt signs under, and the only one it verifies: other signatures on the
    /// same answer (a proxy's, say) are ignored.
    public static let label = "feed"
    /// The longest lifetime (`expires - created`) a signature may claim: 24 hours.
    public static let maximumLifetime: TimeInterval = 86_400
    /// The most components a signature may cover: the gallery covers 6. Each covered field is a
    /// line of the signature base, so a forged list naming one long field thousands of times
    /// made a base of 180 MB, built before the signature could be checked.
    public static let maximumCoveredComponents = 16

    /// What a signature on an answer with `status` must cover: ``requiredNotModifiedComponents``
    /// for a 304, ``requiredComponents`` otherwise.
    public static func requiredComponents(forStatus status: Int) -> [Component] {
        status == 304 ? requiredNotModifiedComponents : requiredComponents
    }

    /// What the gallery covers when it signs an answer with `status`: `@status`, `etag` and the
    /// origin field, for anything but a 304 also `content-type` and `content-digest`, and, when
    /// `bound` (the request sent a nonce), the request's nonce.
    public static func signedComponents(forStatus status: Int, bound: Bool = true) -> [Component] {
        let response: [Component] = status == 304
            ? ["@status", "etag", Component(originField)]
            : ["@status", "etag", "content-type", "content-digest", Component(originField)]
        return response + (bound ? [requestNonce] : [])
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
    ///   - requestField: the value of each covered field of the request answered (lowercase
    ///     name); none by default.
    ///   - components: what the signature covers; by default ``signedComponents(forStatus:bound:)``,
    ///     bound when the request has a ``FeedNonce/field``.
    ///   - keyID: the signing key's fingerprint (its JWK thumbprint).
    ///   - label: the signature's label; ``label`` unless a test signs as someone else.
    public static func sign(
        status: Int, field: (String) -> String?, requestField: (String) -> String? = { _ in nil }, components: [Component]? = nil,
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
        for component in components ?? signedComponents(forStatus: status, bound: requestField(FeedNonce.field) != nil) {
            items.append(Item(bareItem: RFC9651BareItem.string(component.name), parameters: component.fromRequest ? ["req": .bool(true)] : [:]))
        }
        let covered = InnerList(bareInnerList: items, parameters: parameters)
        let base = try signatureBase(status: status, field: field, requestField: requestField, covered: covered)
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
        /// What the signature covers, in order.
        public var components: [Component]
        let covered: InnerList
        let signature: Data
    }

    /// Finds the signature labelled ``label`` in a response's fields and checks its shape: made
    /// with `ed25519`, covering ``requiredComponents(forStatus:)``, with `keyid`, `created` and
    /// `expires`. Signatures under other labels are ignored, so one a proxy adds does not hide
    /// the gallery's.
    /// - Throws: ``SignatureFailure/unboundAnswer`` for a signature that does not cover the
    ///   request's nonce (a gallery too old to bind its answers), else
    ///   ``SignatureFailure/missingSignature(_:)`` saying what is missing.
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
        var components: [Component] = []
        for item in covered.bareInnerList {
            guard case let .string(name) = item.rfc9651BareItem else {
                throw .missingSignature("the \(label) signature covers a component that is not a string")
            }
            let parameters = item.rfc9651Parameters
            if parameters.count == 0 {
                components.append(Component(name))
            } else if parameters.count == 1, case .bool(true)? = parameters["req"], !name.hasPrefix("@") {
                components.append(.request(name))
            } else {
                throw .missingSignature("the \(label) signature covers a component EmojiArt does not know (\(name) with parameters)")
            }
        }
        guard Set(components).count == components.count else {
            throw .missingSignature("the \(label) signature covers a component more than once")
        }
        // First: a gallery that does not bind its answers to requests is too old, whatever else.
        guard components.contains(requestNonce) else { throw .unboundAnswer }
        let required = requiredComponents(forStatus: status)
        guard Set(required).isSubset(of: components) else {
            throw .missingSignature("the \(label) signature does not cover \(required.map(\.description).joined(separator: " "))")
        }
        let parameters = covered.rfc9651Parameters
        guard case .string("ed25519")? = parameters["alg"] else { throw .missingSignature("the \(label) signature is not made with alg ed25519") }
        guard case let .string(keyID)? = parameters["keyid"],
              case let .integer(created)? = parameters["created"],
              case let .integer(expires)? = parameters["expires"]
        else { throw .missingSignature("the \(label) signature lacks keyid, created or expires") }
        return Received(
            keyID: keyID, created: Date(timeIntervalSince1970: TimeInterval(created)),
            expires: Date(timeIntervalSince1970: TimeInterval(expires)), components: components, covered: covered, signature: signature
        )
    }

    /// Checks a received signature: its dates at `now` (allowing `skew` for clocks that differ:
    /// not made in the future, not expired, a lifetime of at most `maximumLifetime`), then the
    /// signature over the fields as received and, for the request's components, the fields of
    /// the request as this side sent it (`requestField`): the signature base is rebuilt from
    /// this side's own request, never from what the answer says it was.
    /// - Throws: ``SignatureFailure/notYetValid(created:now:)``,
    ///   ``SignatureFailure/lifetimeTooLong(seconds:maximum:)``,
    ///   ``SignatureFailure/expired(expires:now:)`` or ``SignatureFailure/badSignature``.
    public static func verify(
        _ received: Received, status: Int, field: (String) -> String?, requestField: (String) -> String?,
        key: Curve25519.Signing.PublicKey,
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
        let base = try signatureBase(status: status, field: field, requestField: requestField, covered: received.covered)
        guard key.isValidSignature(received.signature, for: Data(base.utf8)) else { throw .badSignature }
    }

    /// The RFC 9421 signature base for a response to a request whose fields are `requestField`.
    static func signatureBase(
        status: Int, field: (String) -> String?, requestField: (String) -> String?, covered: InnerList
    ) throws(SignatureFailure) -> String {
        var lines: [String] = []
        for item in covered.bareInnerList {
            guard case let .string(name) = item.rfc9651BareItem else {
                throw .missingSignature("a covered component EmojiArt does not know")
            }
            let parameters = item.rfc9651Parameters
            let fromRequest: Bool
            if parameters.count == 0 {
                fromRequest = false
            } else if parameters.count == 1, case .bool(true)? = parameters["req"] {
                fromRequest = true
            } else {
                throw .missingSignature("a covered component EmojiArt does not know")
            }
            switch name {
            case "@status" where !fromRequest:
                lines.append("\"@status\": \(status)")
            case _ where !name.hasPrefix("@") && fromRequest:
                guard let value = requestField(name) else { throw .missingSignature("the request has no \(name) field to cover") }
                lines.append("\"\(name)\";req: \(value.trimmingCharacters(in: .whitespaces))")
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
