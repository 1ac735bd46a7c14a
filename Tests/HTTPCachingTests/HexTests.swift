import HTTPCaching
import Testing

@Suite struct HexTests {
    @Test func bytesAreWrittenAsSha256sumWritesThem() {
        #expect(Hex.lowercase([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect(Hex.lowercase([]).isEmpty)
    }

    @Test func digitsOfEitherCaseReadBackToTheirBytes() {
        let bytes: [UInt8] = (0..<32).map { UInt8($0 * 8 + 7) }
        #expect(Hex.bytes(Hex.lowercase(bytes), count: 32) == bytes)
        #expect(Hex.bytes(Hex.lowercase(bytes).uppercased(), count: 32) == bytes)
        #expect(Hex.bytes("", count: 0) == [])
    }

    /// A digest read from a disk entry or a feed is hostile until checked: any other length or
    /// character is no digest.
    @Test(arguments: ["000", "0f0", "0g", "+1", " 0", "0x", "ff\u{0}", "é0"])
    func anythingElseIsNoDigest(_ text: String) {
        #expect(Hex.bytes(text, count: 1) == nil, "\(text)")
    }
}
