import Crypto
import HTTPCaching

/// Signs and checks request paths as imgproxy does: the signature is URL-safe base64 without
/// padding of HMAC-SHA256(key, salt + path after the signature), truncated to ``signatureSize``
/// bytes.
///
/// A value type, `Sendable`; checking compares in constant time.
public struct Signer: Sendable {
    private let key: [UInt8]  // SymmetricKey is not Sendable; one is made per signature
    private let salt: [UInt8]
    /// How many bytes of the HMAC the signature keeps, 1...32 (imgproxy's `IMGPROXY_SIGNATURE_SIZE`).
    public let signatureSize: Int

    /// A signer for a key and salt given as hex, as imgproxy's `IMGPROXY_KEY` and `IMGPROXY_SALT`.
    /// - Parameters:
    ///   - keyHex: the HMAC key, an even number of hex digits, not empty.
    ///   - saltHex: the salt put before the path, an even number of hex digits (may be empty).
    ///   - signatureSize: how many bytes of the HMAC to keep, 1...32; 32 by default.
    /// - Throws: ``ImageService/Error/invalidKey(what:reason:)`` or
    ///   ``ImageService/Error/invalidSignatureSize(_:)``.
    public init(keyHex: String, saltHex: String, signatureSize: Int = 32) throws(ImageService.Error) {
        guard let key = Hex.bytes(keyHex, count: keyHex.utf8.count / 2) else {
            throw .invalidKey(what: "key", reason: "it is not hex")
        }
        guard !key.isEmpty else { throw .invalidKey(what: "key", reason: "it is empty") }
        guard let salt = Hex.bytes(saltHex, count: saltHex.utf8.count / 2) else {
            throw .invalidKey(what: "salt", reason: "it is not hex")
        }
        guard (1...32).contains(signatureSize) else { throw .invalidSignatureSize(signatureSize) }
        self.key = key
        self.salt = salt
        self.signatureSize = signatureSize
    }

    /// The signature of a path after the signature, such as `/rs:fit:300:0/plain/http://x/y.png`.
    public func signature(for pathAfterSignature: some StringProtocol) -> String {
        Base64URL.encode(mac(for: pathAfterSignature))
    }

    /// The signed path: `/<signature>` followed by `pathAfterSignature`, which starts with `/`.
    public func sign(_ pathAfterSignature: String) -> String {
        "/" + signature(for: pathAfterSignature) + pathAfterSignature
    }

    /// How a source URL is written in a path.
    public enum SourceEncoding: Sendable {
        /// After `/plain/`, percent-encoded; the extension after `@`.
        case plain
        /// URL-safe base64 without padding; the extension after `.`.
        case base64
    }

    /// The signed path of `source` processed by `options` (each such as `rs:fill:300:300`), as
    /// imgproxy's URL builders make it: `/<signature>/<options>/plain/<source>[@<extension>]` or
    /// `/<signature>/<options>/<base64url source>[.<extension>]`.
    public func path(options: [String], source: String, extension fileExtension: String? = nil, encoding: SourceEncoding = .plain) -> String {
        let encoded = switch encoding {
        case .plain: "plain/" + PercentEncoding.encode(source) + (fileExtension.map { "@" + $0 } ?? "")
        case .base64: Base64URL.encode(Array(source.utf8)) + (fileExtension.map { "." + $0 } ?? "")
        }
        let options = options.filter { !$0.isEmpty }
        return sign("/" + options.map { $0 + "/" }.joined() + encoded)
    }

    /// Checks `signature` against the path after it, in constant time for a signature of the
    /// right length.
    /// - Throws: ``ImageService/Error/malformedSignature(_:expectedBytes:)`` when the signature is
    ///   not base64 of ``signatureSize`` bytes, ``ImageService/Error/signatureMismatch`` when it is
    ///   another path's.
    public func check(signature: some StringProtocol, pathAfterSignature: some StringProtocol) throws(ImageService.Error) {
        guard let given = Base64URL.decode(signature), given.count == signatureSize else {
            throw .malformedSignature(String(signature), expectedBytes: signatureSize)
        }
        let expected = mac(for: pathAfterSignature)
        var difference: UInt8 = 0
        for index in 0..<signatureSize {
            difference |= given[index] ^ expected[index]
        }
        guard difference == 0 else { throw .signatureMismatch }
    }

    private func mac(for pathAfterSignature: some StringProtocol) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: key))
        hmac.update(data: salt)
        hmac.update(data: Array(pathAfterSignature.utf8))
        return Array(Array(hmac.finalize()).prefix(signatureSize))
    }
}
