import Imaging
import Testing

/// `Imaging.process`: its steps checked before decoding, shrink-on-load the same as a resize
/// after loading, and steps that leave an image alone when there is nothing to do.
@Suite struct ProcessTests {
    let imaging = Imaging()

    @Test func refusesStepsOutOfRangeBeforeDecoding() throws {
        let input = try Fixtures.bytes("landscape.jpg")  // 1024 x 768
        #expect(throws: Imaging.Error.invalidArgument("crop of 100x100 at (1000, 0) is outside the 1024x768 image")) {
            try imaging.process(input, operations: [.crop(x: 1000, y: 0, width: 100, height: 100)], encoding: .init(.png))
        }
        #expect(throws: Imaging.Error.invalidArgument("quality 0 must be 1...100")) {
            try imaging.process(input, operations: [], encoding: .init(.jpeg, quality: 0))
        }
        #expect(throws: Imaging.Error.invalidArgument("rotation of 45 degrees: use 0, 90, 180 or 270")) {
            try imaging.process(input, operations: [.rotate(degrees: 45)], encoding: .init(.png))
        }
        // A header over the limits is refused before any step is looked at.
        let bomb = Fixtures.pngBomb(width: 8000, height: 7500)
        #expect(throws: Imaging.Error.tooManyPixels(width: 8000, height: 7500, limit: 50_000_000)) {
            try imaging.process(bomb, operations: [.resize(width: 10, height: 10)], encoding: .init(.png))
        }
    }

    /// A stop ends the computation inside libvips (its "eval" checks), not only between calls:
    /// with a limit already passed, the blur and the encode never finish; with a cancel, the
    /// same. The same work with a generous stop finishes.
    @Test func aStopEndsTheWorkInsideLibvips() throws {
        let input = try Fixtures.bytes("landscape.jpg")
        let heavy: [Imaging.Operation] = [.resize(width: 2048, height: 1536), .blur(sigma: 20)]
        #expect(throws: Imaging.Error.timedOut(limit: .zero)) {
            try imaging.process(input, operations: heavy, encoding: .init(.avif), stop: Imaging.Stop(after: .zero))
        }
        let cancelled = Imaging.Stop(after: .seconds(3600))
        cancelled.cancel()
        #expect(throws: Imaging.Error.cancelled) {
            try imaging.process(input, operations: heavy, encoding: .init(.png), stop: cancelled)
        }
        let made = try imaging.process(input, operations: [.resize(width: 64, height: 48)], encoding: .init(.png), stop: Imaging.Stop(after: .seconds(3600)))
        #expect([made.width, made.height] == [64, 48])
    }

    @Test func resizeOnLoadMatchesResizeAfterLoading() throws {
        let input = try Fixtures.bytes("portrait.png")
        let info = try imaging.probe(input)
        let (width, height) = (info.width / 3, info.height / 3)
        let onLoad = try imaging.process(input, operations: [.resize(width: width, height: height)], encoding: .init(.png))
        // A no-op flatten first (no alpha), so the resize is not the first step.
        let afterLoad = try imaging.process(
            input, operations: [.flatten(red: 0, green: 0, blue: 0), .resize(width: width, height: height)], encoding: .init(.png))
        #expect([onLoad.width, onLoad.height] == [width, height])
        #expect(try imaging.meanAbsoluteDifference(onLoad.data, afterLoad.data) < 1)
    }

    @Test func flattenDropsAlphaOverTheColour() throws {
        let input = try Fixtures.bytes("rgba.png")
        #expect(try imaging.probe(input).hasAlpha)
        let flat = try imaging.process(input, operations: [.flatten(red: 0, green: 0, blue: 255)], encoding: .init(.png))
        let info = try imaging.probe(flat.data)
        #expect(info.hasAlpha == false && info.bands == 3)
    }

    @Test(arguments: Imaging.Encoding.Format.allCases)
    func writesEachFormat(format: Imaging.Encoding.Format) throws {
        let input = try Fixtures.bytes("landscape.jpg")
        let output = try imaging.process(input, operations: [.resize(width: 64, height: 48)], encoding: .init(format))
        #expect(output.mimeType == format.mimeType)
        #expect(try imaging.probe(output.data).format.mimeType == format.mimeType)
        #expect([output.width, output.height] == [64, 48])
    }
}
