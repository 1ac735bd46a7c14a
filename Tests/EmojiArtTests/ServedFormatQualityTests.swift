@testable import EmojiArtApp
import Foundation
import ImageCache
import Imaging
import Testing

/// The served formats' encoder settings hold the project's quality bound: the mean absolute
/// difference from the PNG thumbnail, in premultiplied 8-bit levels, at most 2, on twenty pieces
/// of the gallery's art and on the soft-edges fixture (alpha edges), at both densities (1x, where
/// the difference is largest, and 2x, where WebP goes without sharp YUV); and they are much
/// smaller than the PNG.
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

    /// Made as the app makes them: by its processors, the 1x from the 2x's shrunk pixels.
    @Test(arguments: [ServedFormat.avif, .webp], [1, 2])
    func eachFormatStaysWithinTwoLevelsOfThePNG(format: ServedFormat, density: Int) async throws {
        let imaging = Imaging()
        let box = 200 * density
        let processors = AppServices.processors(boxes: [.thumbs: 200], formats: [format, .png])
        let pngProcessor = try #require(processors[VariantKind(route: .thumbs, density: density, format: .png)])
        let processor = try #require(processors[VariantKind(route: .thumbs, density: density, format: format)])
        #expect(processor.format == format.output(density: density))
        var bytes = 0
        var pngBytes = 0
        for (name, input) in try Self.inputs() {
            let original = ImageCache.Image(data: input, contentType: "image/png")
            let png = try await pngProcessor.process(original)
            let compact = try await processor.process(original)
            #expect(compact.contentType == format.mediaType && compact.pixelSize == png.pixelSize)
            let size = try #require(compact.pixelSize)
            #expect(try imaging.probe(compact.data).format.mimeType == format.mediaType)
            // Decoded back at the same size: what a browser shows.
            let shown = try imaging.thumbnail(compact.data, width: size.width, height: size.height, format: .png)
            // Against a thumbnail made straight from the original.
            let direct = try imaging.thumbnail(input, fitting: box, format: .png)
            let difference = try imaging.meanAbsoluteDifference(shown.data, direct.data)
            #expect(difference <= 2, "\(format) of \(name) at \(box) px: \(difference) levels")
            bytes += compact.byteCount
            pngBytes += png.byteCount
        }
        // AVIF about a ninth of the PNG's bytes, WebP under a third.
        #expect(bytes * (format == .avif ? 6 : 3) < pngBytes, "\(format) at \(box) px: \(bytes) bytes, PNG \(pngBytes)")
    }
}
