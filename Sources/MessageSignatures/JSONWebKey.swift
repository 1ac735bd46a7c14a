public import Crypto
public import Foundation

/// An Ed25519 public key as an RFC 8037 JSON Web Key: `{"kty":"OKP","crv":"Ed25519","x":...}`,
/// with its RFC 7638 thumbprint as `kid`.
public struct JSONWebKey: Codable, Sendable, Hashable {
    /// Key type: `OKP`.
    public var kty: String
    /// Curve: `Ed25519`.
    public var crv: String
    /// The raw 32-byte public key, base64url without padding.
    public var x: String
    /// The key's identifier: its thumbprint.
    public var kid: String?

    /// The JWK of `key`, with its thumbprint as `kid`.
    public init(_ key: Curve25519.Signing.PublicKey) {
        kty = "OKP"
        crv = "Ed25519"
        x = Base64URL.encode(key.rawRepresentation)
        kid = nil
        kid = thumbprint
    }

    /// The RFC 7638 thumbprint: SHA-256 of the required members in lexicographic order, with no
    /// white space, base64url without padding. The key's fingerprint everywhere in EmojiArt.
    public var thumbprint: String {
        let canonical = #"{"crv":"\#(crv)","kty":"\#(kty)","x":"\#(x)"}"#
        return Base64URL.encode(Data(SHA256.hash(data: Data(canonical.utf8))))
    }

    /// The public key this JWK describes.
    /// - Throws: ``SignatureFailure/keyUnavailable(_:)`` when it is not an Ed25519 key, or its
    ///   `kid` is not its thumbprint.
    public func publicKey() throws(SignatureFailure) -> Curve25519.Signing.PublicKey {
        guard kty == "OKP", crv == "Ed25519" else { throw .keyUnavailable("not an Ed25519 key: kty \(kty), crv \(crv)") }
        guard let raw = Base64URL.decode(x), raw.count == 32,
              let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw)
        else { throw .keyUnavailable("x is not a 32-byte Ed25519 public key") }
        if let kid, kid != thumbprint { throw .keyUnavailable("kid \(kid) is not the key's thumbprint \(thumbprint)") }
        return key
    }
}

/// Base64url without padding (RFC 4648 §5), as JOSE uses it.
public enum Base64URL {
    /// Encodes `bytes`.
    public static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes `text`, or `nil` when it is not base64url in its one canonical form: unused
    /// low bits of the last character set would make a second spelling of the same bytes, and
    /// a key's thumbprint is taken over the spelling (two fingerprints for one key).
    public static func decode(_ text: String) -> Data? {
        guard text.utf8.allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "=") }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let bytes = Data(base64Encoded: base64), encode(bytes) == text else { return nil }
        return bytes
    }
}
