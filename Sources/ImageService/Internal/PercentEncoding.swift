import HTTPCaching
/// Percent-decoding as Go's `url.PathUnescape` does it (imgproxy's plain sources): `%XX` becomes
/// the byte, `+` stays `+`, a `%` without two hex digits after it is an error.
enum PercentEncoding {
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count)
        var index = 0
        while index < utf8.count {
            let character = utf8[index]
            if character == UInt8(ascii: "%") {
                guard index + 2 < utf8.count,
                    let high = Hex.value(ofDigit: utf8[index + 1]), let low = Hex.value(ofDigit: utf8[index + 2])
                else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(character)
                index += 1
            }
        }
        return out
    }

    /// Escapes every byte but RFC 3986's unreserved ones, so the result holds no `/`, `:`, `@`
    /// or `%` of its own: the canonical path's spelling of a source URL.
    static func encode(_ text: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
