import Imaging
import Testing

@Suite struct ArtRendererTests {
    let imaging = Imaging()
    let renderer = ArtRenderer()

    @Test(arguments: ArtRenderer.Palette.allCases)
    func gradientRunsFromStartToEndColour(palette: ArtRenderer.Palette) throws {
        let png = try renderer.render(emoji: "😀", palette: palette)
        let info = try imaging.probe(png)
        #expect(info.format == .png)
        #expect(info.width == 360 && info.height == 650)
        #expect(info.bands == 3)
        let (start, end) = palette.colors
        let topLeft = try imaging.pixel(png, x: 0, y: 0)
        let bottomRight = try imaging.pixel(png, x: 359, y: 649)
        #expect(zip(topLeft, start).allSatisfy { abs($0 - $1) <= 2 }, "top left \(topLeft) should be \(start)")
        #expect(zip(bottomRight, end).allSatisfy { abs($0 - $1) <= 2 }, "bottom right \(bottomRight) should be \(end)")
    }

    @Test func paletteFollowsPieceNumber() {
        #expect(ArtRenderer.Palette(piece: 0) == .pinkToTeal)
        #expect(ArtRenderer.Palette(piece: 4) == .redToYellow)
        #expect(ArtRenderer.Palette(piece: 29) == .cyanToIndigo)
    }

    @Test func emojiIsDrawnInColourAtTheCentre() throws {
        // 😀 is yellow: at the centre of the piece the colour must differ from the gradient
        // and be strongly yellow (red and green high, blue low).
        let png = try renderer.render(emoji: "😀", palette: .cyanToIndigo)
        let centre = try imaging.pixel(png, x: 180, y: 300)
        #expect(centre[0] > 180 && centre[1] > 120 && centre[2] < 100, "centre pixel \(centre) is not emoji yellow")
        let differentEmoji = try renderer.render(emoji: "🐸", palette: .cyanToIndigo)
        #expect(differentEmoji != png)
    }

    @Test func rendersAreDeterministic() throws {
        #expect(try renderer.render(emoji: "🎨", palette: .redToYellow) == renderer.render(emoji: "🎨", palette: .redToYellow))
    }
}
