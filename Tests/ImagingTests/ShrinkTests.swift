import Foundation
import Imaging
import Testing

/// One decode for every thumbnail of an original: at the shrunk box the same image as a
/// thumbnail made from the original, and at smaller boxes too for a PNG or GIF (kept whole), a
/// JPEG's or WebP's within a fraction of a level of one; alpha edges without bleed; the same
/// pixels read from many threads at once.
@Suite struct ShrinkTests {
    let imaging = Imaging()

    static let inputs = ["soft-edges.png", "portrait.png", "rgba.png", "landscape.jpg", "photo.webp", "grey.png", "anim.gif"]

    @Test(arguments: inputs)
    func atTheShrunkBoxItIsTheThumbnailOfTheOriginal(_ name: String) throws {
        let input = try Fixtures.bytes(name)
        let shrunk = try imaging.shrink(input, fitting: 120)
        for format in [OutputFormat.png, .webp(quality: 90), .avif(quality: 60, effort: 2)] {
            let direct = try imaging.thumbnail(input, fitting: 120, format: format)
            let fromShrunk = try imaging.thumbnail(of: shrunk, fitting: 120, format: format)
            #expect(fromShrunk == direct, "\(name) in \(format)")
        }
        #expect(shrunk.byteCount >= shrunk.width * shrunk.height)
    }

    @Test(arguments: inputs)
    func aSmallerBoxIsWithinAFractionOfALevelOfTheOriginalsThumbnail(_ name: String) throws {
        let input = try Fixtures.bytes(name)
        let shrunk = try imaging.shrink(input, fitting: 120)
        let direct = try imaging.thumbnail(input, fitting: 60)
        let fromShrunk = try imaging.thumbnail(of: shrunk, fitting: 60)
        #expect(fromShrunk.width == direct.width && fromShrunk.height == direct.height, "\(name)")
        if name.hasSuffix(".png") || name.hasSuffix(".gif") {
            #expect(fromShrunk == direct, "\(name): kept whole, every box is the original's thumbnail")
        }
        let difference = try imaging.meanAbsoluteDifference(fromShrunk.data, direct.data)
        // rgba.png is noise, where two resizes differ most from one: 1.4 levels.
        #expect(difference < (name == "rgba.png" ? 2 : 1), "\(name): \(difference) levels")
    }

    /// A smaller box of an RGBA PNG kept whole keeps the soft edges' colour: as close to the
    /// float reference as a thumbnail of the original, and far from a resize that bleeds.
    @Test func softEdgesKeepTheirColourFromTheShrunkPixels() throws {
        let input = try Fixtures.bytes("soft-edges.png")
        let shrunk = try imaging.shrink(input, fitting: 200)
        let ours = try imaging.thumbnail(of: shrunk, fitting: 100)
        #expect(ours.width == 100 && ours.height == 100)
        let reference = try imaging.referenceThumbnail(input, width: 100, height: 100)
        let bleeding = try imaging.referenceThumbnail(input, width: 100, height: 100, resize: .straight)
        let ourError = try imaging.meanAbsoluteDifference(ours.data, reference)
        let bleedingError = try imaging.meanAbsoluteDifference(bleeding, reference)
        #expect(ourError < 0.75 && ourError * 3 < bleedingError, "ours \(ourError), bleeding \(bleedingError)")
    }

    @Test func aBoxLargerThanTheShrunkOneIsRefused() throws {
        let shrunk = try imaging.shrink(try Fixtures.bytes("portrait.png"), fitting: 50)
        #expect(throws: Imaging.Error.self) { try imaging.thumbnail(of: shrunk, fitting: 51) }
        #expect(throws: Imaging.Error.self) { try imaging.shrink(try Fixtures.bytes("portrait.png"), fitting: 0) }
    }

    @Test func aTruncatedOriginalFailsWhenShrunk() throws {
        let input = try Fixtures.bytes("portrait.png")
        let error = #expect(throws: Imaging.Error.self) { try imaging.shrink(Array(input.prefix(input.count * 2 / 3)), fitting: 40) }
        guard case .corrupt = error else { Issue.record("got \(String(describing: error))"); return }
    }

    @Test func manyThreadsMakeThumbnailsOfOneShrunkImageAtOnce() async throws {
        let shrunk = try imaging.shrink(try Fixtures.bytes("soft-edges.png"), fitting: 200)
        let expected = try imaging.thumbnail(of: shrunk, fitting: 90, format: .webp(quality: 80))
        let imaging = imaging
        let results = try await withThrowingTaskGroup(of: EncodedImage.self) { group in
            for _ in 0..<16 { group.addTask { try imaging.thumbnail(of: shrunk, fitting: 90, format: .webp(quality: 80)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 16 && results.allSatisfy { $0 == expected })
    }
}
