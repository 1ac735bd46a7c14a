import Crypto

/// SHA-256 as lowercase hex, the form the feed's checksums and the cache's file names use.
public enum SHA256Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// The SHA-256 of `bytes`, as 64 lowercase hex digits.
    public static func digest(_ bytes: [UInt8]) -> String {
        hex(SHA256.hash(data: bytes))
    }

    /// Bytes as lowercase hex, two digits each.
    public static func hex(_ digest: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
