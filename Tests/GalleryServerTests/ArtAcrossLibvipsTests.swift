import Foundation
import GalleryServer
import Imaging
import NIOCore
import Testing

/// The gallery's art looks the same whatever libvips draws it: three pieces (three palettes, three
/// emoji) as Debian's libvips 8.14.1 drew them, kept in Fixtures/, against what the running libvips
/// draws now, pixel for pixel. The PNG bytes may differ (another libvips compresses otherwise, and
/// then the checksums in the signed feed change with them); the picture a buyer sees may not.
@Suite struct ArtAcrossLibvipsTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/art-libvips-8.14.1")

    @Test(arguments: [1, 4, 7])
    func thePieceIsPixelIdenticalToLibvips814s(piece: Int) async throws {
        let before = [UInt8](try Data(contentsOf: Self.fixtures.appendingPathComponent("piece-\(piece).png")))
        let now = Array(try await ArtStore.load().pieces[piece].png.readableBytesView)
        let imaging = Imaging()
        let (old, new) = (try imaging.probe(before), try imaging.probe(now))
        #expect(old.width == new.width && old.height == new.height && old.bands == new.bands)
        // 0 only when every band of every pixel is equal.
        #expect(try imaging.meanAbsoluteDifference(before, now) == 0, "piece \(piece) on libvips \(Imaging.libvipsVersion)")
    }
}
