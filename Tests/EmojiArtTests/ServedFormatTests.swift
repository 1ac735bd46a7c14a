import Foundation
@testable import EmojiArtApp
import Testing

/// The format an image answer gets from the request's `Accept`, and the `--formats` list.
@Suite struct ServedFormatTests {
    static let all = ServedFormat.allCases

    @Test(arguments: [
        // (Accept, format with all three offered)
        (nil, ServedFormat.png),
        ("*/*", .png),
        ("image/*", .png),
        ("image/png", .png),
        ("image/webp", .webp),
        ("image/avif", .avif),
        ("image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", .avif),  // Chromium
        ("image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5", .avif),  // Safari
        ("image/avif,image/webp,*/*", .avif),  // Firefox
        ("image/webp,*/*", .webp),
        ("image/avif;q=0, image/webp", .webp),
        ("image/avif;q=0.0, image/webp;q=0", .png),
        ("IMAGE/AVIF ; Q=0.5, image/png;q=0.4", .avif),
        ("image/webp;q=0.5, image/png", .png),  // the client prefers PNG
        ("image/avif;q=0.5, image/webp;q=0.5, image/png;q=0.5", .avif),  // equal: the smallest
        ("image/avif;q=2, image/webp", .webp),  // not a q-value: counted as 0
        ("image/avif;q=0.0001", .png),  // four decimals: not a q-value
        ("image/avif;level=1;q=0, image/webp", .webp),  // q among other parameters
        ("image/avif ;\tq = 1.000", .avif),
        ("image/avif;q=1.5, image/png;q=0.001", .png),  // 1.5: not a q-value
        ("text/html", .png),  // nothing acceptable: PNG all the same
        ("", .png),
        (",,;;", .png),
        ("image/avif," + String(repeating: "a/b,", count: 600), .png),  // over 2 KiB: not read
        // A quoted parameter value may hold commas and semicolons: they end nothing.
        ("image/png;x=\",image/avif,\"", .png),
        ("image/png;x=\"a;q=0\", image/webp;q=0.5", .png),
        ("image/png;x=\"\\\",image/avif\", image/webp", .webp),  // an escaped quote stays inside
        ("image/webp;x=\"a,b\";q=0.9, image/png;q=0.8", .webp),
    ] as [(String?, ServedFormat)])
    func acceptChoosesTheFormat(accept: String?, format: ServedFormat) {
        #expect(ServedFormat.negotiate(accept, offered: Self.all) == format, "\(accept ?? "(none)")")
    }

    @Test func onlyOfferedFormatsAreChosen() {
        let chromium = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
        #expect(ServedFormat.negotiate(chromium, offered: [.webp, .png]) == .webp)
        #expect(ServedFormat.negotiate(chromium, offered: [.png]) == .png)
        #expect(ServedFormat.negotiate("image/avif", offered: [.webp, .png]) == .png)
    }

    @Test func theFormatsListIsCheckedAndOrdered() throws {
        #expect(try ServedFormat.list("png,webp,avif") == [.avif, .webp, .png])
        #expect(try ServedFormat.list(" webp , png") == [.webp, .png])
        #expect(try ServedFormat.list("PNG") == [.png])
        for (text, problem) in [("avif,webp", "png must be listed"), ("png,gif", "unknown format \"gif\""), ("png,png", "listed twice"), ("", "unknown format")] {
            #expect {
                try ServedFormat.list(text)
            } throws: { error in
                "\(error)".contains(problem) && "\(error)".contains("--formats")
            }
        }
        #expect(AppConfiguration(galleryURL: .init(fileURLWithPath: "/"), formats: [.avif]).formats == [.avif, .png], "PNG is always offered")
    }
}
