import ImageCache
import Imaging
import Testing
@testable import ImageService

/// A plan carried out on real libvips: sizes, positions, filters, formats, identifiers and
/// refusals, each against expectations worked out from imgproxy's rules.
@Suite struct PlanProcessorTests {
    let imaging = Imaging()

    /// The result of `options` on `source`, written as `output`.
    func result(
        _ options: String, _ source: [UInt8] = TestImages.quadrants, output: PlanProcessor.Output = .format(.png),
        limits: Imaging.Limits = PlanProcessor.defaultLimits
    ) async throws -> ImageCache.Image {
        let processor = PlanProcessor(plan: try plan(options), output: output, limits: limits)
        return try await processor.process(ImageCache.Image(data: source, contentType: "image/png"))
    }

    func size(_ image: ImageCache.Image) throws -> [Int] {
        let info = try imaging.probe(image.data)
        #expect(image.pixelSize == .init(width: info.width, height: info.height))
        return [info.width, info.height]
    }

    /// Whether the pixel at (x, y) is `colour` within `tolerance` levels on each band.
    func pixel(_ image: ImageCache.Image, _ x: Int, _ y: Int, is colour: [UInt8], tolerance: Double = 12) throws -> Bool {
        let values = try imaging.pixel(image.data, x: x, y: y)
        return zip(values, colour).allSatisfy { abs($0 - Double($1)) <= tolerance }
    }

    // Expected sizes of the 640 x 480 source, from imgproxy's scale rules (see each comment).
    static let sizes: [(String, [Int])] = [
        ("rs:fit:300:300", [300, 225]),  // shrink by max(640/300, 480/300)
        ("rs:fill:300:300", [300, 300]),  // shrink by min: 400 x 300, cut
        ("rs:fill-down:300:300", [300, 300]),
        ("rs:force:320:100", [320, 100]),
        ("rs:auto:300:100", [300, 100]),  // both landscape: fill
        ("rs:auto:100:300", [100, 75]),  // orientations differ: fit
        ("w:320", [320, 240]),  // height from the aspect ratio
        ("h:120", [160, 120]),
        ("rs:fit:1280:1280", [640, 480]),  // never enlarged
        ("rs:fit:1280:1280/el:1", [1280, 960]),
        ("rs:fill:1000:1000", [640, 480]),  // not enlarged, cut to at most the image
        ("rs:fill:1000:1000/ex:1", [1000, 1000]),
        ("rs:fill-down:1000:500", [640, 320]),  // the target's aspect ratio within the image
        ("rs:fill:1000:500", [640, 480]),
        ("rs:fit:300:300/ex:1", [300, 300]),
        ("rs:fit:300:300/dpr:2", [600, 450]),
        ("rs:fit:400:400/dpr:2", [640, 480]),  // dpr capped: no enlarging
        ("rs:fit:400:400/dpr:2/el:1", [800, 600]),
        ("rs:fill:300:300/dpr:2", [480, 480]),  // dpr capped at 1.6
        ("rs:fit:1000:1000/dpr:2/ex:1", [1000, 1000]),
        ("rs:fill:100:100/c:320:240", [100, 100]),
        ("c:320:240", [320, 240]),  // crop alone
        ("c:0.5:0.25", [320, 120]),  // fractions of the source
        ("c:320:0/w:160", [160, 240]),
    ]

    @Test(arguments: sizes)
    func resultSize(options: String, expected: [Int]) async throws {
        #expect(try size(try await result(options)) == expected)
    }

    // Which quadrant's colour shows in the cut's corners, by gravity.
    static let gravities: [(String, [(Int, Int, [UInt8])])] = [
        // 640 x 480 filled into 100 x 100: 133 x 100, cut across.
        ("rs:fill:100:100/g:we", [(2, 2, TestImages.red), (2, 97, TestImages.blue)]),
        ("rs:fill:100:100/g:ea", [(97, 2, TestImages.green), (97, 97, TestImages.white)]),
        ("rs:fill:100:100/g:nowe", [(2, 2, TestImages.red)]),
        ("rs:fill:100:100/g:soea", [(97, 97, TestImages.white)]),
        // Filled into 100 x 50: 100 x 75, cut down.
        ("rs:fill:100:50/g:no", [(2, 2, TestImages.red), (97, 2, TestImages.green)]),
        ("rs:fill:100:50/g:so", [(2, 47, TestImages.blue), (97, 47, TestImages.white)]),
        // Offsets push away from the edge: 20 px from the west edge.
        ("rs:fill:100:100/g:we:20:0", [(2, 2, TestImages.red)]),
        // Focus points: at the left edge (cut at 0), the right (at 33), and at 0.6 (at 30, not
        // the centre's 17: the red-green boundary moves from 49 to 36).
        ("rs:fill:100:100/g:fp:0:0.5", [(2, 2, TestImages.red)]),
        ("rs:fill:100:100/g:fp:1:0.5", [(97, 2, TestImages.green)]),
        ("rs:fill:100:100/g:fp:0.6:0.5", [(31, 2, TestImages.red), (42, 2, TestImages.green)]),
        ("rs:fill:100:100", [(42, 2, TestImages.red), (55, 2, TestImages.green)]),
        // A crop before resizing, at its own gravity: the bottom-right quadrant alone.
        ("c:320:240:soea", [(2, 2, TestImages.white), (317, 237, TestImages.white)]),
        // ... or at the plan's.
        ("c:320:240/g:nowe", [(2, 2, TestImages.red), (317, 237, TestImages.red)]),
        // Extended into 300 x 300 at the top: the image above, transparent (flattened white
        // for JPEG, see below) under it.
        ("rs:fit:300:300/ex:1:no/bg:000000", [(2, 2, TestImages.red), (2, 297, [0, 0, 0])]),
        ("rs:fit:300:300/ex:1:so/bg:000000", [(2, 2, [0, 0, 0]), (2, 297, TestImages.blue)]),
    ]

    @Test(arguments: gravities)
    func cutsAtGravity(options: String, corners: [(Int, Int, [UInt8])]) async throws {
        let image = try await result(options)
        for (x, y, colour) in corners {
            let values = try imaging.pixel(image.data, x: x, y: y)
            #expect(try pixel(image, x, y, is: colour), "(\(x), \(y)) of \(options) is \(values)")
        }
    }

    @Test func fillOffsetMovesTheCut() async throws {
        // The cut moves 20 px right of the west edge, so the red-green boundary (66 in the
        // 133 px wide image) shows at 46 instead of 66.
        let image = try await result("rs:fill:100:100/g:we:20:0")
        #expect(try pixel(image, 40, 2, is: TestImages.red))
        #expect(try pixel(image, 53, 2, is: TestImages.green))
    }

    @Test func stepsShrinkOnLoadUnlessCutFirst() throws {
        let landscape = ImageInfo(format: .jpeg, width: 640, height: 480, bands: 3, hasAlpha: false)
        func steps(_ options: String, _ source: ImageInfo = landscape) throws -> [Imaging.Operation] {
            let plan = try plan(options)
            return PlanProcessor.operations(for: plan, source: source, autoRotate: plan.autoRotate ?? true, flattensAlpha: false)
        }
        // The resize right after auto-rotation: libvips shrinks on load.
        #expect(try steps("w:320") == [.autoRotate, .resize(width: 320, height: 240)])
        #expect(try steps("w:320/ar:0") == [.resize(width: 320, height: 240)])
        // Turned by the plan after resizing, so the resize is of the unturned image.
        #expect(try steps("w:240/rot:90") == [.autoRotate, .resize(width: 320, height: 240), .rotate(degrees: 90)])
        // Sides swapped by the EXIF orientation: the size is of the upright image.
        let sideways = ImageInfo(format: .jpeg, width: 640, height: 480, bands: 3, hasAlpha: false, orientation: 6)
        #expect(try steps("w:240", sideways) == [.autoRotate, .resize(width: 240, height: 320)])
        // A crop comes before the resize, in the turned image.
        #expect(try steps("c:320:240:nowe/w:160") == [.autoRotate, .crop(x: 0, y: 0, width: 320, height: 240), .resize(width: 160, height: 120)])
        // Offsets below 1 are fractions of the side; fill with an extend and a background.
        #expect(try steps("rs:fill:100:480/g:we:0.25:0") == [.autoRotate, .crop(x: 160, y: 0, width: 100, height: 480)])
        #expect(try steps("rs:fit:700:700/ex:1:no/bg:ff0000") == [
            .autoRotate, .extend(x: 30, y: 0, width: 700, height: 700), .flatten(red: 255, green: 0, blue: 0),
        ])
    }

    @Test func smartGravityPicksTheDetailedPart() async throws {
        let smart = try await result("rs:fill:100:100/g:sm", TestImages.patchAtRight)
        let east = try await result("rs:fill:100:100/g:ea", TestImages.patchAtRight)
        let west = try await result("rs:fill:100:100/g:we", TestImages.patchAtRight)
        #expect(try size(smart) == [100, 100])
        #expect(try imaging.meanAbsoluteDifference(smart.data, east.data) < imaging.meanAbsoluteDifference(smart.data, west.data))
        #expect(try pixel(smart, 95, 50, is: [128, 128, 128], tolerance: 20) == false)
    }

    @Test func backgroundFlattensAlpha() async throws {
        let green = try await result("bg:00ff00", TestImages.halfTransparent)
        #expect(try imaging.probe(green.data).hasAlpha == false)
        #expect(try pixel(green, 10, 50, is: TestImages.green))
        #expect(try pixel(green, 190, 50, is: TestImages.red))
        // Without a background, PNG keeps the transparency; JPEG, which has no alpha, gets white.
        let kept = try await result("", TestImages.halfTransparent)
        #expect(try imaging.pixel(kept.data, x: 10, y: 50).last == 0)
        let jpeg = try await result("", TestImages.halfTransparent, output: .format(.jpeg))
        #expect(try pixel(jpeg, 10, 50, is: TestImages.white, tolerance: 4))
        // An extended JPEG is white around the image too.
        let extended = try await result("rs:fit:300:300/ex:1", output: .format(.jpeg))
        #expect(try pixel(extended, 150, 10, is: TestImages.white, tolerance: 4))
    }

    @Test(arguments: ["bl:3", "sh:2"])
    func filtersChangePixels(filter: String) async throws {
        let plain = try await result("w:160", TestImages.checker)
        let filtered = try await result("w:160/" + filter, TestImages.checker)
        #expect(try size(filtered) == [160, 120])
        #expect(try imaging.meanAbsoluteDifference(plain.data, filtered.data) > 2)
    }

    @Test func rotatesClockwiseAfterResizing() async throws {
        // The size is the rotated image's: 480 x 640 to width 320.
        let image = try await result("w:320/rot:90")
        #expect(try size(image) == [320, 427])
        #expect(try pixel(image, 2, 2, is: TestImages.blue))
        #expect(try pixel(image, 317, 2, is: TestImages.red))
        #expect(try pixel(image, 317, 424, is: TestImages.green))
        let upsideDown = try await result("w:320/rot:180")
        #expect(try size(upsideDown) == [320, 240])
        #expect(try pixel(upsideDown, 2, 2, is: TestImages.white))
    }

    @Test func autoRotatesByEXIFOrientation() async throws {
        let jpeg = try imaging.process(TestImages.quadrants, operations: [], encoding: .init(.jpeg, quality: 95)).data
        // Orientation 6: the stored image is shown turned 90 degrees clockwise.
        let oriented = TestImages.withOrientation(jpeg, 6)
        #expect(try imaging.probe(oriented).orientation == 6)
        let upright = try await result("w:240", oriented, output: .format(.png))
        #expect(try size(upright) == [240, 320])
        #expect(try pixel(upright, 3, 3, is: TestImages.blue, tolerance: 40))
        #expect(try pixel(upright, 236, 3, is: TestImages.red, tolerance: 40))
        // With auto-rotation off, the stored image as it is.
        let stored = try await result("w:240/ar:0", oriented, output: .format(.png))
        #expect(try size(stored) == [240, 180])
        #expect(try pixel(stored, 3, 3, is: TestImages.red, tolerance: 40))
        // Auto-rotation, then the plan's rotation (together, the stored image upside down),
        // with a crop before resizing (no shrink on load), in the turned image: its top-left.
        let both = try await result("c:240:320:nowe/rot:90", oriented, output: .format(.png))
        #expect(try size(both) == [240, 320])
        #expect(try pixel(both, 3, 3, is: TestImages.white, tolerance: 40))
        #expect(try pixel(both, 236, 316, is: TestImages.green, tolerance: 40))
    }

    // Each EXIF orientation, and which quadrant shows top-left and top-right once upright.
    static let orientations: [(UInt16, [Int], [UInt8], [UInt8])] = [
        (1, [160, 120], TestImages.red, TestImages.green),
        (2, [160, 120], TestImages.green, TestImages.red),  // mirrored
        (3, [160, 120], TestImages.white, TestImages.blue),  // upside down
        (4, [160, 120], TestImages.blue, TestImages.white),  // flipped
        (5, [120, 160], TestImages.red, TestImages.blue),  // transposed
        (6, [120, 160], TestImages.blue, TestImages.red),
        (7, [120, 160], TestImages.white, TestImages.green),  // transversed
        (8, [120, 160], TestImages.green, TestImages.white),
    ]

    @Test(arguments: orientations)
    func turnsEveryOrientationUpright(orientation: UInt16, size: [Int], topLeft: [UInt8], topRight: [UInt8]) async throws {
        let jpeg = try imaging.process(TestImages.quadrants, operations: [], encoding: .init(.jpeg, quality: 95)).data
        let image = try await result("rs:fit:160:160", TestImages.withOrientation(jpeg, orientation))
        #expect(try self.size(image) == size)
        #expect(try pixel(image, 3, 3, is: topLeft, tolerance: 40))
        #expect(try pixel(image, size[0] - 4, 3, is: topRight, tolerance: 40))
    }

    @Test func writesTheChosenFormat() async throws {
        let gif = try imaging.process(TestImages.quadrants, operations: [.resize(width: 64, height: 48)], encoding: .init(.gif)).data
        let jpeg = try imaging.process(TestImages.quadrants, operations: [], encoding: .init(.jpeg)).data
        let avif = try imaging.process(TestImages.quadrants, operations: [.resize(width: 64, height: 48)], encoding: .init(.avif)).data
        let cases: [([UInt8], PlanProcessor.Output, String)] = [
            (TestImages.quadrants, .sourceFormat, "image/png"),
            (jpeg, .sourceFormat, "image/jpeg"),
            (gif, .sourceFormat, "image/gif"),
            (avif, .sourceFormat, PlanProcessor.writesAVIF ? "image/avif" : "image/jpeg"),
            (TestImages.quadrants, .format(.jpeg), "image/jpeg"),
            (TestImages.quadrants, .format(.webp), "image/webp"),
            (TestImages.quadrants, .format(.avif), "image/avif"),
            (TestImages.quadrants, .format(.gif), "image/gif"),
        ]
        for (source, output, mimeType) in cases {
            let image = try await result("w:64", source, output: output)
            #expect(image.contentType == mimeType)
            #expect(try imaging.probe(image.data).format.mimeType == mimeType)
            #expect(try size(image) == [64, 48])
        }
    }

    @Test func qualityChangesSize() async throws {
        let low = try await result("q:30", TestImages.gradient, output: .format(.jpeg))
        let high = try await result("q:95", TestImages.gradient, output: .format(.jpeg))
        let byDefault = try await result("", TestImages.gradient, output: .format(.jpeg))
        #expect(low.byteCount < byDefault.byteCount)
        #expect(byDefault.byteCount < high.byteCount)
    }

    @Test func metadataIsStrippedUnlessKept() async throws {
        let jpeg = try imaging.process(TestImages.quadrants, operations: [], encoding: .init(.jpeg, quality: 95)).data
        let oriented = TestImages.withOrientation(jpeg, 1)
        let stripped = try await result("w:64", oriented, output: .format(.jpeg))
        let kept = try await result("w:64/sm:0", oriented, output: .format(.jpeg))
        #expect(!stripped.data.contains(subsequence: Array("Exif".utf8)))
        #expect(kept.data.contains(subsequence: Array("Exif".utf8)))
    }

    @Test func plainFitMatchesLibvipsReference() async throws {
        let image = try await result("rs:fit:200:200", TestImages.gradient)
        #expect(try size(image) == [200, 150])
        let reference = try imaging.referenceThumbnail(TestImages.gradient, width: 200, height: 150)
        #expect(try imaging.meanAbsoluteDifference(image.data, reference) <= 2)
    }

    @Test func refusesSixtyMegapixelsFromTheHeader() async throws {
        // 8000 x 7500 claimed, nothing behind it: a decode would fail as corrupt, so the
        // resolution error shows the header alone was read.
        let bomb = TestImages.claiming(width: 8000, height: 7500)
        #expect(bomb.count < 100)
        await #expect(throws: ImageService.Error.sourceResolutionTooLarge(width: 8000, height: 7500, limit: "50000000 pixels")) {
            try await result("w:100", bomb)
        }
    }

    @Test func refusesTooManyFrames() async throws {
        let gif = TestImages.animatedGIF(frames: 3)
        #expect(try imaging.probe(gif).frames == 3)
        await #expect(throws: ImageService.Error.tooManyFrames(frames: 3, limit: 2)) {
            try await result("w:100", gif, limits: .init(maxFrames: 2))
        }
        // Within the limit, the first frame is processed.
        let first = try await result("w:100", gif, limits: .init(maxFrames: 3))
        #expect(try size(first) == [1, 1])
        #expect(try pixel(first, 0, 0, is: [0, 0, 0], tolerance: 0))
    }

    @Test func refusesWhatIsNotAnImage() async throws {
        let html = Array("<html><body>Not found</body></html>".utf8)
        let error = await #expect(throws: ImageService.Error.self) { try await result("w:100", html) }
        guard case .sourceUndecodable(let reason) = error else {
            Issue.record("expected sourceUndecodable, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("text"))
    }
}

/// The identifier: one for each processing, whatever its spelling.
@Suite struct PlanProcessorIdentifierTests {
    func identifier(_ path: String, _ output: PlanProcessor.Output = .format(.jpeg)) throws -> String {
        PlanProcessor(plan: try unsigned.plan(forPath: path), output: output).identifier
    }

    static let sameProcessing: [(String, String)] = [
        ("/_/rs:fill:300:200/plain/http://a/x.jpg", "/_/rt:fill/w:300/h:200/plain/http://a/x.jpg"),
        ("/_/w:300/q:80/plain/http://a/x.jpg", "/_/width:300/plain/http://b/other.jpg"),
        ("/_/w:300/cb:123/exp:99999999999/fn:cat/plain/http://a/x.jpg", "/_/w:300/plain/http://a/x.jpg"),
        ("/_/w:300/ar:1/sm:1/plain/http://a/x.jpg", "/_/w:300/plain/http://a/x.jpg"),
        ("/_/w:300/g:ce:0:0/plain/http://a/x.jpg", "/_/w:300/g:ce/plain/http://a/x.jpg"),
    ]

    @Test func qualityCountsOnlyForLossyFormats() throws {
        let path = "/_/w:300/plain/http://a/x.jpg", lower = "/_/w:300/q:50/plain/http://a/x.jpg"
        #expect(try identifier(path, .format(.png)) == identifier(lower, .format(.png)))
        #expect(try identifier(path, .format(.webp)) != identifier(lower, .format(.webp)))
        #expect(try identifier(path, .sourceFormat) != identifier(lower, .sourceFormat))
    }

    @Test(arguments: sameProcessing)
    func twoSpellingsOneIdentifier(first: String, second: String) throws {
        #expect(try identifier(first) == identifier(second))
    }

    static let differentProcessing: [String] = [
        "/_/w:300/plain/http://a/x.jpg",
        "/_/w:301/plain/http://a/x.jpg",
        "/_/w:300/q:81/plain/http://a/x.jpg",
        "/_/w:300/bl:2/plain/http://a/x.jpg",
        "/_/w:300/sh:2/plain/http://a/x.jpg",
        "/_/w:300/rot:90/plain/http://a/x.jpg",
        "/_/w:300/ar:0/plain/http://a/x.jpg",
        "/_/w:300/sm:0/plain/http://a/x.jpg",
        "/_/w:300/g:no/plain/http://a/x.jpg",
        "/_/w:300/dpr:2/plain/http://a/x.jpg",
        "/_/w:300/el:1/plain/http://a/x.jpg",
        "/_/w:300/ex:1/plain/http://a/x.jpg",
        "/_/w:300/c:100:100/plain/http://a/x.jpg",
        "/_/w:300/bg:ffffff/plain/http://a/x.jpg",
        "/_/rs:fill:300:0/plain/http://a/x.jpg",
    ]

    @Test func differentProcessingDifferentIdentifiers() throws {
        let identifiers = try Self.differentProcessing.map { try identifier($0) }
        #expect(Set(identifiers).count == identifiers.count)
        let path = "/_/w:300/plain/http://a/x.jpg"
        let outputs: [PlanProcessor.Output] = [.format(.jpeg), .format(.png), .format(.webp), .sourceFormat]
        let byOutput = try outputs.map { try identifier(path, $0) }
        #expect(Set(byOutput).count == outputs.count)
    }
}

extension [UInt8] {
    func contains(subsequence: [UInt8]) -> Bool {
        guard count >= subsequence.count else { return false }
        return (0...(count - subsequence.count)).contains { self[$0..<($0 + subsequence.count)].elementsEqual(subsequence) }
    }
}
