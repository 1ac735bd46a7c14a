import Crypto
import HTTPCaching

/// SHA-256 as lowercase hex, the form the feed's checksums and the cache's file names use.
public enum SHA256Hex {
    /// The SHA-256 of `bytes`, as 64 lowercase hex digits.
    public static func digest(_ bytes: [UInt8]) -> String {
        Hex.lowercase(SHA256.hash(data: bytes))
    }

    /// The SHA-256 of `image`'s bytes, read in place, as 64 lowercase hex digits.
    public static func digest(_ image: Image) -> String {
        image.withUnsafeBytes { Hex.lowercase(SHA256.hash(data: $0)) }
    }

    /// Whether `text` is a digest in that form: 64 lowercase hex digits.
    public static func isDigest(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
