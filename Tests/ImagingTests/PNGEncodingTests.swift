import CZlib
import Imaging
import Testing

/// The PNG settings each kind of image is written with, read back from the PNG itself: every row
/// of a PNG's image data starts with the filter it was encoded with (0 none, 1 sub, ...).
/// Photographs and images with alpha are written with the sub filter (20 to 40 % smaller); drawn
/// art without alpha, such as the gallery's, without a filter (smaller for flat gradients).
@Suite struct PNGEncodingTests {
    let imaging = Imaging()

    @Test(arguments: [
        ("landscape.jpg", UInt8(1)),  // a photograph
        ("photo.webp", 1),  // a photograph
        ("rgba.png", 1),  // alpha
        ("soft-edges.png", 1),  // alpha
        ("portrait.png", 0),  // drawn, no alpha
        ("grey.png", 0),  // drawn, no alpha
    ])
    func aThumbnailsRowsUseTheFilterChosenForItsInput(name: String, filter: UInt8) throws {
        let thumbnail = try imaging.thumbnail(try Fixtures.bytes(name), fitting: 200)
        let filters = try PNGRows.filters(of: thumbnail.data)
        #expect(filters.count == thumbnail.height)
        #expect(Set(filters) == [filter], "\(name): row filters \(Set(filters).sorted())")
    }

    @Test func theGallerysArtIsWrittenUnfiltered() throws {
        let art = try ArtRenderer().render(emoji: "🌵", palette: .pinkToTeal)
        let filters = try PNGRows.filters(of: art)
        #expect(filters.count == ArtRenderer.height)
        #expect(Set(filters) == [0])
    }

    @Test func theReaderRefusesWhatIsNotAPNG() {
        #expect(throws: PNGRows.Failure.self) { try PNGRows.filters(of: Array("not a png".utf8)) }
    }
}

/// Reads the filter byte of every row of an 8-bit, non-interlaced PNG.
enum PNGRows {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func filters(of png: [UInt8]) throws(Failure) -> [UInt8] {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard png.count > 8, Array(png[0..<8]) == signature else { throw Failure(description: "no PNG signature") }
        var offset = 8
        var header: [UInt8] = []
        var data: [UInt8] = []
        while offset + 12 <= png.count {
            let length = Int(png[offset]) << 24 | Int(png[offset + 1]) << 16 | Int(png[offset + 2]) << 8 | Int(png[offset + 3])
            let type = String(decoding: png[offset + 4..<offset + 8], as: UTF8.self)
            guard offset + 12 + length <= png.count else { throw Failure(description: "chunk \(type) runs past the end") }
            let body = png[offset + 8..<offset + 8 + length]
            if type == "IHDR" { header = Array(body) }
            if type == "IDAT" { data += body }
            offset += 12 + length
        }
        guard header.count == 13 else { throw Failure(description: "no IHDR") }
        let width = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        let height = Int(header[4]) << 24 | Int(header[5]) << 16 | Int(header[6]) << 8 | Int(header[7])
        let channels: [UInt8: Int] = [0: 1, 2: 3, 3: 1, 4: 2, 6: 4]
        guard header[8] == 8, let bands = channels[header[9]], header[12] == 0 else {
            throw Failure(description: "depth \(header[8]), colour type \(header[9]), interlace \(header[12])")
        }
        let stride = 1 + width * bands
        var rows = [UInt8](repeating: 0, count: stride * height)
        var size = uLongf(rows.count)
        let status = rows.withUnsafeMutableBufferPointer { out in
            data.withUnsafeBufferPointer { uncompress(out.baseAddress, &size, $0.baseAddress, uLong($0.count)) }
        }
        guard status == Z_OK, Int(size) == rows.count else {
            throw Failure(description: "zlib status \(status), \(size) of \(rows.count) bytes")
        }
        return (0..<height).map { rows[$0 * stride] }
    }
}
