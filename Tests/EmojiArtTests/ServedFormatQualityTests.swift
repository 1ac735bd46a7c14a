@testable import EmojiArtApp
import Foundation
import Imaging
import Testing

/// The served formats' encoder settings hold the project's quality bound: the mean absolute
/// difference from the PNG thumbnail, in premultiplied 8-bit levels, at most 2, on twenty pieces
/// of the gallery's art and on the soft-edges fixture (alpha edges), at the 200 px box where the
/// difference is largest; and they are much smaller than the PNG.
@Suite struct ServedFormatQualityTests {
    static let emoji = Array("😀🐶🌈🍕🚀🎨🦊🌻🍉⚽️🎸🐙🌵🍩🦋🏔🎃🐳🍄🔥").map(String.init)

    static func inputs() throws -> [(String, [UInt8])] {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ImagingTests/Fixtures")
        var inputs = [("soft-edges.png", [UInt8](try Data(contentsOf: fixtures.appendingPathComponent("soft-edges.png"))))]
        let renderer = ArtRenderer()
        for (index, emoji) in emoji.enumerated() {
            inputs.append(("art \(emoji)", try renderer.render(emoji: emoji, palette: .init(piece: index * 7))))
        }
        return inputs
    }

    @Test(arguments: [ServedFormat.avif, .webp], [200, 400])
    func eachFormatStaysWithinTwoLevelsOfThePNG(format: ServedFormat, box: Int) throws {
        let imaging = Imaging()
        var bytes = 0
        var pngBytes = 0
        for (name, input) in try Self.inputs() {
            let png = try imaging.thumbnail(input, fitting: box, format: .png)
            let compact = try imaging.thumbnail(input, fitting: box, format: format.output)
            #expect(compact.mimeType == format.mediaType && compact.width == png.width && compact.height == png.height)
            #expect(try imaging.probe(compact.data).format.mimeType == format.mediaType)
            // Decoded back at the same size: what a browser shows.
            let shown = try imaging.thumbnail(compact.data, width: compact.width, height: compact.height, format: .png)
            let difference = try imaging.meanAbsoluteDifference(shown.data, png.data)
            #expect(difference <= 2, "\(format) of \(name) at \(box) px: \(difference) levels")
            bytes += compact.data.count
            pngBytes += png.data.count
        }
        // AVIF about a ninth of the PNG's bytes, WebP under a third.
        #expect(bytes * (format == .avif ? 6 : 3) < pngBytes, "\(format) at \(box) px: \(bytes) bytes, PNG \(pngBytes)")
    }
}
