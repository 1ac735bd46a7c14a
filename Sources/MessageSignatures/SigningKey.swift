public import Crypto
public import Foundation

/// An Ed25519 signing key that can cross concurrency domains: swift-crypto's key type is not
/// `Sendable` on Linux, so this keeps the raw 32 bytes and makes the key when it is used.
public struct SigningKey: Sendable, Hashable {
    /// The raw 32-byte private key.
    public let rawRepresentation: Data

    /// A new random key.
    public init() {
        rawRepresentation = Curve25519.Signing.PrivateKey().rawRepresentation
    }

    /// The key `key`.
    public init(_ key: Curve25519.Signing.PrivateKey) {
        rawRepresentation = key.rawRepresentation
    }

    /// The swift-crypto key.
    public var privateKey: Curve25519.Signing.PrivateKey {
        // The bytes came from a valid key: this cannot fail.
        try! Curve25519.Signing.PrivateKey(rawRepresentation: rawRepresentation)
    }

    /// The public key, as a JSON Web Key with its thumbprint as `kid`.
    public var publicJWK: JSONWebKey { JSONWebKey(privateKey.publicKey) }

    /// The fingerprint: the RFC 7638 thumbprint of the public key.
    public var fingerprint: String { publicJWK.thumbprint }
}
