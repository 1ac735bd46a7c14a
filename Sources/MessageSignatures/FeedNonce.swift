public import Foundation

/// The nonce an app sends with each feed request, in the request field ``field``: at least 128
/// random bits (``byteCount`` bytes) as unpadded base64url. The gallery signs its answer over
/// that field of the request (RFC 9421 section 2.4, `"emojiart-feed-nonce";req`), so an answer
/// recorded for one request verifies for no other: a replayed 200 or 304 is refused.
///
/// Self-contained (Foundation only) so the header fuzzer compiles it as it is.
public enum FeedNonce {
    /// The request field, lowercase as a signature names it.
    public static let field = "emojiart-feed-nonce"
    /// Random bytes in a nonce this app makes: 128 bits.
    public static let byteCount = 16
    /// The longest value taken: 128 characters (96 random bytes), far more than any app sends.
    public static let maximumLength = 128

    /// A fresh nonce: ``byteCount`` bytes from the system's random source, as base64url.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Whether `value` is a nonce the gallery signs over: 22 to ``maximumLength`` characters
    /// (at least 128 bits) of the base64url alphabet, no padding, nothing else. Total: any
    /// bytes give an answer, and only the bytes of `value` are read.
    public static func isWellFormed(_ value: some StringProtocol) -> Bool {
        let bytes = value.utf8
        // 22 characters of 6 bits: 132 bits, the shortest spelling of 128.
        guard (22...maximumLength).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"): true
            default: false
            }
        }
    }
}
