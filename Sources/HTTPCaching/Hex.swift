/// Hexadecimal, the one encoder and decoder of digests in EmojiArt: the gallery's checksums
/// (`sha256:` and 64 digits) and strong ETags, the cache's file names and the digests its
/// entries keep, all in the form `sha256sum` prints; and the image service's keys, salts,
/// colours and percent-escapes.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as lowercase hex, two digits a byte.
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The `count` bytes that `2 * count` hex digits (either case) spell; `nil` for any other
    /// length or any other character.
    public static func bytes(_ hex: some StringProtocol, count: Int) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard count >= 0, digits.count == 2 * count else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(ofDigit: digits[index]), let low = value(ofDigit: digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    /// The value of one hex digit (either case), 0...15; `nil` for any other character.
    public static func value(ofDigit digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x61...0x66: digit - 0x61 + 10
        case 0x41...0x46: digit - 0x41 + 10
        default: nil
        }
    }
}
