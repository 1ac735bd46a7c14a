/// URL-safe base64 (RFC 4648 section 5) without padding, strict: every character is checked and
/// the unused bits of the last character must be zero, so one byte string has one spelling.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 0x3F)])
            }
        }
        if bits > 0 {
            out.append(alphabet[Int((buffer << UInt32(6 - bits)) & 0x3F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes, or nil for a character outside the alphabet, a length of 1 mod 4, or non-zero
    /// unused bits. Padding is not accepted here; callers that tolerate it strip it first.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = text.utf8
        if utf8.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for character in utf8 {
            guard let value = sextet(character) else { return nil }
            buffer = (buffer << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        if buffer != 0 { return nil }
        return out
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
