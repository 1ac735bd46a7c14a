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
        #expect(prepared.answer(versioned: false, notModified: false).head.headerFields[.contentType] == sent)
        #expect(prepared.answer(versioned: false, notModified: false).head.headerFields[.xContentTypeOptions] == "nosniff")
    }

    @Test func aPreparedAnswerIsUsedOnlyForTheBytesItWasMadeFrom() {
        let bytes: [UInt8] = Array(repeating: 7, count: 1000)
        let original = image(bytes)
        let prepared = PreparedAnswer(image: original, etag: "\"e\"", cacheControl: ImageCacheControl(.revalidate))
        // The same array (as memory hands out the same entry again): the prepared answer.
        #expect(prepared.isMade(from: image(original.data)))
        // Equal bytes in another array (loaded again from disk, or made again): not the same bytes
        // for all the answer knows, so it is made again.
        var copy = bytes
        copy.withUnsafeMutableBufferPointer { _ in }  // a unique array of its own
        #expect(!prepared.isMade(from: image(copy)))
        #expect(!prepared.isMade(from: Image(data: original.data, contentType: "image/webp")))
        #expect(!prepared.isMade(from: image(Array(bytes.dropLast()))))
    }

    @Test func preparedAnswersAreTheRoutesFields() throws {
        let data: [UInt8] = [1, 2, 3, 4, 5]
        let prepared = PreparedAnswer(image: image(data), etag: "\"e\"", cacheControl: ImageCacheControl(.immutable))
        let ok = prepared.answer(versioned: false, notModified: false)
        #expect(ok.status == .ok && ok.body == ByteBuffer(bytes: data))
        #expect(ok.headerFields.map { "\($0.name): \($0.value)" } == [
            "ETag: \"e\"", "Cache-Control: no-cache", "Vary: Accept", "Content-Type: image/png", "Content-Length: 5",
            "X-Content-Type-Options: nosniff",
        ])
        let versioned = prepared.answer(versioned: true, notModified: true)
        #expect(versioned.status == .notModified && versioned.body.readableBytes == 0)
        #expect(versioned.headerFields.map { "\($0.name): \($0.value)" } == [
            "ETag: \"e\"", "Cache-Control: public, max-age=31536000, immutable", "Vary: Accept", "X-Content-Type-Options: nosniff",
        ])
    }

    @Test func preparedBodiesStayWithinTheirBudget() throws {
        let variants = ServedVariants(preparedBudget: 3000)
        let first = try variant(variants, piece: 1)
        let second = try variant(variants, piece: 2)
        let control = ImageCacheControl(.revalidate)
        let one = image(Array(repeating: 1, count: 1000))
        variants.keep(etag: "\"1\"", of: one, prepared: PreparedAnswer(image: one, etag: "\"1\"", cacheControl: control), for: first)
        let two = image(Array(repeating: 2, count: 1000))
        variants.keep(etag: "\"2\"", of: two, prepared: PreparedAnswer(image: two, etag: "\"2\"", cacheControl: control), for: second)
        // The second answer would pass the budget: its ETag is kept, its answer is not.
        #expect(variants.entry(first.key, checksum: "c1")?.prepared != nil)
        #expect(variants.entry(second.key, checksum: "c2")?.prepared == nil)
        #expect(variants.etag(of: two, second) == "\"2\"")
        #expect(variants.state.withLock { $0.preparedBytes } == 2000, "the body and the array it keeps alive")
        // A new feed entry for piece 1 frees its body; then the second fits.
        _ = try variant(variants, piece: 1)
        #expect(variants.state.withLock { $0.preparedBytes } == 0)
        variants.keep(etag: "\"2\"", of: two, prepared: PreparedAnswer(image: two, etag: "\"2\"", cacheControl: control), for: second)
        #expect(variants.entry(second.key, checksum: "c2")?.prepared != nil)
        // The entry replaced: what was kept for the old variant is not taken.
        variants.keep(etag: "\"1\"", of: one, prepared: PreparedAnswer(image: one, etag: "\"1\"", cacheControl: control), for: first)
        #expect(variants.etag(of: one, first) == nil)
        #expect(variants.entry(first.key, checksum: "c2") == nil, "another feed checksum")
    }
}
