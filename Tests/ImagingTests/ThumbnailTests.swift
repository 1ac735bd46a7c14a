import Foundation
import Imaging
import Testing

@Suite struct ThumbnailTests {
    let imaging = Imaging()

    @Test(arguments: [
        // name, format, original size, expected thumbnail size in a 200 box
        ("landscape.jpg", ImageFormat.jpeg, 1024, 768, 200, 150),
        ("portrait.png", .png, 600, 1000, 120, 200),
        ("rgba.png", .png, 400, 400, 200, 200),
        ("grey.png", .png, 300, 500, 120, 200),
        ("photo.webp", .webp, 800, 600, 200, 150),
        ("anim.gif", .gif, 320, 240, 200, 150),
        ("tiny.png", .png, 50, 30, 50, 30),
    ])
    func fitsTheBoxKeepingAspectRatio(
        name: String, format: ImageFormat, width: Int, height: Int, thumbWidth: Int, thumbHeight: Int
    ) throws {
        let input = try Fixtures.bytes(name)
        let info = try imaging.probe(input)
        #expect(info.format == format)
        #expect(info.width == width && info.height == height)

        let thumbnail = try imaging.thumbnail(input, fitting: 200)
        #expect(thumbnail.width == thumbWidth)
        #expect(thumbnail.height == thumbHeight)
        let reread = try imaging.probe(thumbnail.data)
        #expect(reread.format == .png)
        #expect(reread.width == thumbWidth && reread.height == thumbHeight)
    }

    @Test func keepsAlphaAndGreyBands() throws {
        let rgba = try imaging.thumbnail(try Fixtures.bytes("rgba.png"), fitting: 100)
        #expect(try imaging.probe(rgba.data).hasAlpha)
        let grey = try imaging.thumbnail(try Fixtures.bytes("grey.png"), fitting: 100)
        #expect(try imaging.probe(grey.data).bands == 1)
        #expect(try imaging.probe(Fixtures.bytes("rgba.png")).bands == 4)
    }

    @Test(arguments: [
        (OutputFormat.png, ImageFormat.png),
        (.webp(quality: 80), .webp),
        (.jpeg(quality: 85), .jpeg),
    ])
    func encodesEachOutputFormat(output: OutputFormat, expected: ImageFormat) throws {
        let thumbnail = try imaging.thumbnail(try Fixtures.bytes("landscape.jpg"), fitting: 160, format: output)
        #expect(thumbnail.mimeType == expected.mimeType)
        let info = try imaging.probe(thumbnail.data)
        #expect(info.format == expected)
        #expect(info.width == 160 && info.height == 120)
    }

    @Test func rectangularBoxFitsBothSides() throws {
        let thumbnail = try imaging.thumbnail(try Fixtures.bytes("landscape.jpg"), width: 400, height: 100)
        #expect(thumbnail.height == 100)
        #expect(thumbnail.width == 133)
    }

    @Test func eightConcurrentTasksAgree() async throws {
        let input = try Fixtures.bytes("portrait.png")
        let imaging = self.imaging
        let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<8 {
                group.addTask { try imaging.thumbnail(input, fitting: 200).data }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 8)
        #expect(Set(results).count == 1)
    }

    @Test func rejectsBadArguments() throws {
        let input = try Fixtures.bytes("tiny.png")
        #expect(throws: Imaging.Error.self) { try imaging.thumbnail(input, fitting: 0) }
        #expect(throws: Imaging.Error.self) { try imaging.thumbnail(input, fitting: 10, format: .jpeg(quality: 0)) }
    }
}
