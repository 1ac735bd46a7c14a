@testable import EmojiArtApp
import ImageCache
import Imaging
import Testing

/// The app's processors share each original's one decode, and a variant's bytes do
/// not depend on which variant was asked for first.
@Suite struct ThumbnailProcessorTests {
    static func art(_ emoji: String) throws -> ImageCache.Image {
        ImageCache.Image(data: try ArtRenderer().render(emoji: emoji, palette: .redToYellow), contentType: "image/png")
    }

    static func kinds(_ processors: [VariantKind: ThumbnailProcessor]) -> [VariantKind] {
        processors.keys.sorted { ($0.density, $0.format.rawValue) < ($1.density, $1.format.rawValue) }
    }

    @Test func theVariantsOfOneOriginalShareOneShrinkWhicheverComesFirst() async throws {
        let original = try Self.art("🦊")
        let processors = AppServices.processors(boxes: [.thumbs: 200], formats: [.avif, .webp, .png])
        #expect(processors.count == 6)
        var made: [VariantKind: ImageCache.Image] = [:]
        for kind in Self.kinds(processors) { made[kind] = try await processors[kind]!.process(original) }
        // Another app, asking in the other order: the same bytes.
        let again = AppServices.processors(boxes: [.thumbs: 200], formats: [.avif, .webp, .png])
        for kind in Self.kinds(again).reversed() {
            let variant = try await again[kind]!.process(original)
            #expect(variant.data == made[kind]!.data, "\(kind)")
        }
        // One decode of the original for all six.
        let shrinks = try #require(processors.values.first?.shrinks)
        #expect(processors.values.allSatisfy { $0.shrinks === shrinks })
        #expect(shrinks.counts.made == 1 && shrinks.counts.reused == 5, "\(shrinks.counts)")
        // The PNG original is kept whole: the 1x PNG is the thumbnail of the original itself.
        let oneX = try #require(made[VariantKind(route: .thumbs, density: 1, format: .png)])
        let direct = try Imaging().thumbnail(original.data, fitting: 200)
        #expect(oneX.pixelSize == .init(width: direct.width, height: direct.height) && oneX.data == direct.data)
        #expect(processors[VariantKind(route: .thumbs, density: 1, format: .png)]!.identifier == "thumbnail-200-of-400-png")
        #expect(ThumbnailProcessor.catalogThumbnail(size: 200).identifier == "thumbnail-200-of-400-png", "sync's, the same")
    }

    @Test func theStoreKeepsTheLatestWithinItsBytes() async throws {
        let shrinks = ShrunkOriginals(byteLimit: 1_500_000)  // two of the art's decoded PNGs (702 KB each)
        let imaging = Imaging()
        let originals = try ["🦊", "🐙", "🌵"].map(Self.art)
        for original in originals { _ = try await shrinks.shrunk(original, fitting: 400, imaging: imaging) }
        _ = try await shrinks.shrunk(originals[2], fitting: 400, imaging: imaging)
        _ = try await shrinks.shrunk(originals[1], fitting: 400, imaging: imaging)
        #expect(shrinks.counts.made == 3 && shrinks.counts.reused == 2)
        _ = try await shrinks.shrunk(originals[0], fitting: 400, imaging: imaging)
        #expect(shrinks.counts.made == 4, "the first was dropped for the third")
        _ = try await shrinks.shrunk(originals[0], fitting: 200, imaging: imaging)
        #expect(shrinks.counts.made == 5, "another box is another shrink")
    }

    /// Six variants asked for at once: one decode, the other five wait for its pixels.
    @Test func variantsAskedAtOnceShareOneDecode() async throws {
        let original = try Self.art("🐙")
        let shrinks = ShrunkOriginals()
        let processors = [1, 2].flatMap { density in
            [ServedFormat.avif, .webp, .png].map {
                ThumbnailProcessor(size: 200 * density, format: $0.output(density: density), shrinkBox: 400, sharing: shrinks)
            }
        }
        let made = try await withThrowingTaskGroup(of: (String, [UInt8]).self) { group in
            for processor in processors { group.addTask { (processor.identifier, try await processor.process(original).data) } }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(made.count == 6 && shrinks.counts.made == 1 && shrinks.counts.reused == 5, "\(shrinks.counts)")
        for (kind, processor) in AppServices.processors(boxes: [.thumbs: 200], formats: [.avif, .webp, .png]) {
            #expect(try await processor.process(original).data == made[processor.identifier], "\(kind): the same bytes made one at a time")
        }
    }

    /// The PNG made while somebody waits streams an original nothing has decoded (its answer
    /// does not pay for the decode the other variants share), with the same bytes; once the
    /// original is kept, it uses the kept pixels.
    @Test func theVariantMadeWhileSomebodyWaitsStreamsAnOriginalNothingHasDecoded() async throws {
        let original = try Self.art("🍄")
        let processors = AppServices.processors(boxes: [.thumbs: 200], formats: [.avif, .png])
        let png = try #require(processors[VariantKind(route: .thumbs, density: 1, format: .png)])
        let avif = try #require(processors[VariantKind(route: .thumbs, density: 1, format: .avif)])
        let shrinks = try #require(png.shrinks)
        #expect(png.streamsWhenNothingIsKept && !avif.streamsWhenNothingIsKept)
        let streamed = try await png.process(original)
        #expect(shrinks.counts.made == 0 && shrinks.counts.reused == 0, "streamed: nothing decoded into the store")
        _ = try await avif.process(original)
        let fromKept = try await png.process(original)
        #expect(shrinks.counts.made == 1 && shrinks.counts.reused == 1, "\(shrinks.counts)")
        #expect(streamed.data == fromKept.data, "the same bytes either way")
    }

    /// A PNG whose decoded pixels would not fit the store is never decoded whole: its variants
    /// are made from the original, streaming, and they are the same bytes.
    @Test func aPNGTooLargeToKeepIsMadeFromTheOriginalWithTheSameBytes() async throws {
        let original = try Self.art("🌵")
        let small = ShrunkOriginals(byteLimit: 100_000)  // the art decoded takes 702 KB
        #expect(try await small.shrunk(original, fitting: 400, imaging: Imaging()) == nil)
        let large = ShrunkOriginals()
        for (size, format) in [(400, OutputFormat.avif(quality: 60, effort: 2)), (200, .png)] {
            let streamed = try await ThumbnailProcessor(size: size, format: format, shrinkBox: 400, sharing: small).process(original)
            let kept = try await ThumbnailProcessor(size: size, format: format, shrinkBox: 400, sharing: large).process(original)
            #expect(streamed.data == kept.data, "\(size) \(format)")
        }
        #expect(small.counts.made == 0 && large.counts.made == 1)
    }

    /// Issue 48: a PNG too large to keep whole was decoded once per variant (six times a piece).
    /// Now it is decoded once, streaming, and kept shrunk to the box: every variant comes from
    /// that one decode; at the box it is the thumbnail of the original, below it within 2 levels (measured: 1.1 at worst).
    @Test func aPNGTooLargeToKeepWholeIsDecodedOnceAndKeptShrunk() async throws {
        let original = try Self.art("🦊")
        let imaging = Imaging()
        let shrunkOnly = ShrunkOriginals(byteLimit: 600_000)  // the art whole: 1.4 MB; shrunk to 400 px: 533 KB
        let whole = ShrunkOriginals()
        let variants: [(Int, OutputFormat)] = [(400, .png), (400, .webp(quality: 80, sharpYUV: false)), (200, .png), (200, .avif(quality: 60, effort: 2))]
        for (size, format) in variants {
            let fromShrunk = try await ThumbnailProcessor(size: size, format: format, shrinkBox: 400, sharing: shrunkOnly).process(original)
            let fromWhole = try await ThumbnailProcessor(size: size, format: format, shrinkBox: 400, sharing: whole).process(original)
            #expect(fromShrunk.pixelSize == fromWhole.pixelSize, "\(size) \(format)")
            let difference = try imaging.meanAbsoluteDifference(fromShrunk.data, fromWhole.data)
            #expect(difference <= (size == 400 ? 0.01 : 2.0), "\(size) \(format): \(difference) levels")
        }
        #expect(shrunkOnly.counts.made == 1 && shrunkOnly.counts.reused == variants.count - 1, "\(shrunkOnly.counts)")
    }
}
