@testable import EmojiArtApp
import HTTPCaching
import Testing

/// `Accept` and `Accept-Encoding` read as RFC 9110 12.4.2 weighs them: each element's name and
/// its weight in thousandths, any `q` that is not a q-value read as 0, a field over 2 KiB not read.
@Suite struct WeightedPreferencesTests {
    static func read(_ field: String?) -> [String] {
        WeightedPreferences(field).map { "\(Substring($0.name)) \($0.weight)" }
    }

    @Test(arguments: [
        // (field, each element as "name weight")
        (nil, []),
        ("", []),
        (",, ,\t,", []),  // empty elements are no elements
        ("gzip", ["gzip 1000"]),
        ("gzip, deflate;q=0.5, br;q=0", ["gzip 1000", "deflate 500", "br 0"]),
        ("image/avif,image/webp,*/*;q=0.8", ["image/avif 1000", "image/webp 1000", "*/* 800"]),
        (" GZIP ;\tQ = 0.25 ", ["GZIP 250"]),  // the name as sent; spaces around `;` and `=`
        ("a;q=1, b;q=1.0, c;q=1.000, d;q=0., e;q=0.001", ["a 1000", "b 1000", "c 1000", "d 0", "e 1"]),
        // Not q-values: counted as 0, not acceptable.
        ("a;q=2, b;q=1.001, c;q=0.0001, d;q=.5, e;q=-1, f;q=, g;q=1e-3, h;q=0.5x", ["a 0", "b 0", "c 0", "d 0", "e 0", "f 0", "g 0", "h 0"]),
        ("a;level=1;q=0.3;x=y", ["a 300"]),  // q among other parameters
        ("a;q=0.3;q=0.7", ["a 700"]),  // the last q
        ("a;qq=0.2, b;x=q=0", ["a 1000", "b 1000"]),  // no parameter named q
        // A quoted value may hold commas and semicolons: they end nothing.
        ("a;x=\",b,\";q=0.5, c", ["a 500", "c 1000"]),
        ("a;x=\"\\\",b;q=0\", c", ["a 1000", "c 1000"]),  // an escaped quote stays inside
        ("a;x=\"never closed, b", ["a 1000"]),
    ] as [(String?, [String])])
    func eachElementComesWithItsWeight(field: String?, elements: [String]) {
        #expect(Self.read(field) == elements, "\(field ?? "(none)")")
    }

    @Test func aFieldOverTwoKiBIsNotRead() {
        let longest = "gzip," + String(repeating: " ", count: WeightedPreferences.maxLength - 5)
        #expect(Self.read(longest) == ["gzip 1000"])
        #expect(Self.read(longest + " ").isEmpty)
    }

    @Test(arguments: [0, 1, 9, 10, 99, 100, 500, 999, 1000])
    func everyWeightRFC9110CanWriteReadsExactly(thousandths: Int) {
        let decimals = thousandths == 1000 ? "1.000" : "0." + String(String(thousandths + 1000).dropFirst())
        #expect(Self.read("a;q=\(decimals)") == ["a \(thousandths)"], "\(decimals)")
    }
}
