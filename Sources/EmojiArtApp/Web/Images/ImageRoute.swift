/// The two image routes.
enum ImageRoute: String, Sendable {
    case thumbs
    case large

    /// `/thumbs/N` or `/large/N` (density 1), `/thumbs/2x/N` or `/large/2x/N` (density 2), with
    /// N in ASCII digits without a leading zero (``pieceNumber(_:)``), and no query or one `v=` of letters and digits; `nil` for any other
    /// form (the router answers those).
    static func parse(_ path: String) -> (route: ImageRoute, density: Int, piece: Int, version: Substring?)? {
        let utf8 = path.utf8
        let route: ImageRoute
        let prefix: Int
        if utf8.starts(with: "/thumbs/".utf8) {
            (route, prefix) = (.thumbs, 8)
        } else if utf8.starts(with: "/large/".utf8) {
            (route, prefix) = (.large, 7)
        } else {
            return nil
        }
        // By UTF-8 offsets: the path is ASCII where it matters, and counting characters would cost
        // more than the memory hit this leads to.
        var rest = utf8[utf8.index(utf8.startIndex, offsetBy: prefix)...]
        var density = 1
        if rest.starts(with: "2x/".utf8) {
            density = 2
            rest = rest.dropFirst(3)
        }
        var piece = 0
        var digits = 0
        while let byte = rest.first, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            guard digits < 9 else { return nil }
            piece = piece * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            rest = rest.dropFirst()
        }
        guard digits > 0, digits == 1 || piece >= Self.power(digits - 1) else { return nil }  // "05" is no spelling of 5
        guard let mark = rest.first else { return (route, density, piece, nil) }
        let query = rest.dropFirst()
        guard mark == UInt8(ascii: "?"), query.starts(with: "v=".utf8) else { return nil }
        let version = query.dropFirst(2)
        guard !version.isEmpty, version.count <= 64, version.allSatisfy({
            ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z"))
        }) else { return nil }
        return (route, density, piece, Substring(version))
    }

    /// A piece number as a path names it: ASCII digits, at most nine, with no leading zero (`5`,
    /// not `05`: one spelling per route); `nil` for anything else.
    static func pieceNumber(_ text: some StringProtocol) -> Int? {
        let utf8 = text.utf8
        guard (1...9).contains(utf8.count), utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              utf8.count == 1 || utf8.first != UInt8(ascii: "0")
        else { return nil }
        return Int(text)
    }

    /// 10 to the power `exponent`.
    private static func power(_ exponent: Int) -> Int {
        (0..<exponent).reduce(1) { value, _ in value * 10 }
    }
}
