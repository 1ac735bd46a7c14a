import HTTPCaching

/// Hex conversions of digests, apart from the hashing itself so the disk format's code (and
/// `make fuzz`, which compiles it alone) needs no crypto library.
extension SHA256Hex {
    /// Bytes as lowercase hex, two digits each (HTTPCaching's `Hex`, the one encoder).
    public static func hex(_ digest: some Sequence<UInt8>) -> String {
        Hex.lowercase(digest)
    }

    /// The bytes of 64 hex digits (either case); `nil` for anything else.
    public static func bytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: digit - 0x30
            case 0x61...0x66: digit - 0x61 + 10
            case 0x41...0x46: digit - 0x41 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

}
