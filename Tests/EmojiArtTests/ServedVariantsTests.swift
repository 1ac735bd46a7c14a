@testable import EmojiArtApp
@testable import FastLane
import Foundation
import HTTPTypes
import ImageCache
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Synchronization
import Testing

/// The image routes' prepared answers: each must give exactly what
/// the slower way it replaces gives.
@Suite struct ServedVariantsTests {
    func image(_ bytes: [UInt8], source: String? = "sha-of-original") -> Image {
        Image(data: bytes, contentType: "image/png", originalSHA256: source)
    }

    func variant(_ variants: ServedVariants, piece: Int = 1) throws -> ServedVariant {
        let request = ImageRequest(url: try #require(URL(string: "http://127.0.0.1:1/gallery/image?\(piece)")))
        let variant = ServedVariant(
            key: .init(piece: piece, kind: .init(route: .thumbs, density: 1, format: .png)), checksum: "c\(piece)", request: request, version: "0123456789abcdef"
        )
        variants.add(variant, for: variant.key)
        return variant
    }

    @Test(arguments: [
        ("image/png", "image/png"), ("image/webp", "image/webp"), ("IMAGE/JPEG; q=1", "IMAGE/JPEG; q=1"),
        ("text/html", "application/octet-stream"), ("image/svg+xml", "application/octet-stream"),
        ("text/html; image/png", "application/octet-stream"), ("", "application/octet-stream"),
    ])
    func anImageAnswerNeverCarriesATypeABrowserWouldRunScriptIn(stored: String, sent: String) {
        // A planted entry's type is bytes from disk: text/html on the app's origin would be a page.
        let planted = Image(data: Array("<script>alert(1)</script>".utf8), contentType: stored)
        let prepared = PreparedAnswer(image: planted, etag: "\"e\"", cacheControl: ImageCacheControl(.revalidate))
        #expect(prepared.answer(with: planted, versioned: false, notModified: false).head.headerFields[.contentType] == sent)
        #expect(prepared.answer(with: planted, versioned: false, notModified: false).head.headerFields[.xContentTypeOptions] == "nosniff")
    }

    @Test func preparedAnswersAreTheRoutesFields() throws {
        let data: [UInt8] = [1, 2, 3, 4, 5]
        let made = image(data)
        let prepared = PreparedAnswer(image: made, etag: "\"e\"", cacheControl: ImageCacheControl(.immutable))
        let ok = prepared.answer(with: made, versioned: false, notModified: false)
        #expect(ok.status == .ok && ok.body == ByteBuffer(bytes: data))
        #expect(ok.headerFields.map { "\($0.name): \($0.value)" } == [
            "ETag: \"e\"", "Cache-Control: no-cache", "Vary: Accept", "Content-Type: image/png", "Content-Length: 5",
            "X-Content-Type-Options: nosniff",
        ])
        let versioned = prepared.answer(with: made, versioned: true, notModified: true)
        #expect(versioned.status == .notModified && versioned.body.readableBytes == 0)
        #expect(versioned.headerFields.map { "\($0.name): \($0.value)" } == [
            "ETag: \"e\"", "Cache-Control: public, max-age=31536000, immutable", "Vary: Accept", "X-Content-Type-Options: nosniff",
        ])
    }

    @Test func anETagIsKeptForItsVariantAndOriginalOnly() throws {
        let variants = ServedVariants()
        let first = try variant(variants, piece: 1)
        let one = image(Array(repeating: 1, count: 1000))
        variants.keep(etag: "\"1\"", of: one, for: first)
        #expect(variants.etag(of: one, first) == "\"1\"")
        #expect(variants.etag(of: image(Array(repeating: 1, count: 999)), first) == nil, "another size")
        #expect(variants.etag(of: image(Array(repeating: 1, count: 1000), source: "other"), first) == nil, "another original")
        // A new feed entry for piece 1: what was kept for the old variant is not taken.
        _ = try variant(variants, piece: 1)
        #expect(variants.etag(of: one, first) == nil)
        variants.keep(etag: "\"1\"", of: one, for: first)
        #expect(variants.etag(of: one, first) == nil)
        #expect(variants.entry(first.key, checksum: "c2") == nil, "another feed checksum")
    }
}
