import EmojiArtApp
import Foundation
import GalleryServer
import Hummingbird
import HummingbirdTesting
import ImageCache
import Testing
import TestSupport

/// The app's image answers as HTTP caches see them: a strong ETag, 304 on `If-None-Match`,
/// `HEAD` without a body, and `Cache-Control` as each `--http-cache` mode says.
@Suite struct ImageAnswerTests {
    func withApp(
        _ mode: HTTPCacheMode, _ body: @Sendable (any TestClientProtocol, ImagePipeline) async throws -> Void
    ) async throws {
        try await withGallery { galleryURL, pipeline in
            let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust, httpCache: mode)
            let model = makeModel(galleryURL, pipeline)
            let router = try EmojiArtApp.buildRouter(configuration, model: model, pipeline: pipeline)
            await model.loadAndVerify()
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            try await app.test(.router) { client in try await body(client, pipeline) }
        }
    }

    @Test(arguments: [(HTTPCacheMode.revalidate, "no-cache"), (.noStore, "no-store"), (.immutable, "no-cache")])
    func anETagA304AndHEADInEveryMode(mode: HTTPCacheMode, cacheControl: String) async throws {
        try await withApp(mode) { client, pipeline in
            let (etag, bytes) = try await client.execute(uri: "/thumbs/5", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == cacheControl)
                return (try #require(response.headers[.eTag]), [UInt8](buffer: response.body))
            }
            #expect(etag == "\"\(SHA256Hex.digest(bytes))\"", "strong, from the payload's hash")
            try await client.execute(uri: "/thumbs/5", method: .get) { #expect($0.headers[.eTag] == etag) }  // stable

            let before = await pipeline.stats().memoryHits
            try await client.execute(uri: "/thumbs/5", method: .get, headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.eTag] == etag && response.headers[.cacheControl] == cacheControl)
            }
            #expect(await pipeline.stats().memoryHits == before + 1, "a 304 still counts what the cache did")
            try await client.execute(uri: "/thumbs/5", method: .get, headers: [.ifNoneMatch: "\"other\""]) {
                #expect($0.status == .ok && $0.body.readableBytes == bytes.count)
            }
            try await client.execute(uri: "/large/5", method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.eTag] != nil && response.headers[.eTag] != etag)
                #expect(Int(response.headers[.contentLength] ?? "") ?? 0 > 0)
            }
        }
    }

    @Test func immutableModeLinksContentAddressedURLsAndRedirectsAnOutdatedOne() async throws {
        try await withApp(.immutable) { client, _ in
            let html = try await client.execute(uri: "/", method: .get) { String(buffer: $0.body) }
            let links = html.components(separatedBy: "src=\"/thumbs/5?v=").dropFirst()
            let version = try #require(links.first.map { String($0.prefix(while: { $0 != "\"" })) })
            #expect(version.count == 16)
            try await client.execute(uri: "/thumbs/5?v=\(version)", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "public, max-age=31536000, immutable")
            }
            try await client.execute(uri: "/thumbs/5?v=0000000000000000", method: .get) { response in
                #expect(response.status == .temporaryRedirect)
                #expect(response.headers[.location] == "/thumbs/5?v=\(version)")
                #expect(response.headers[.cacheControl] == "no-store")
            }
            // The details variant has a URL of its own (the first entries include a piece shown).
            var details = ""
            for index in 0..<10 where !details.contains("src=\"/large/") {
                details = try await client.execute(uri: "/pieces/\(index)", method: .get) { String(buffer: $0.body) }
            }
            #expect(details.contains("src=\"/large/") && details.contains("?v="))
            #expect(!details.contains("?v=\(version)"))
        }
    }

    /// The catalog page may be kept by a browser, which asks again on every load (`no-cache`,
    /// with its `ETag`: CatalogPageTests); the other pages and the JSON are never kept.
    @Test func theCatalogIsAskedForAgainAndOtherPagesAndJSONAreNeverKept() async throws {
        try await withApp(.immutable) { client, _ in
            try await client.execute(uri: "/", method: .get) {
                #expect($0.headers[.cacheControl] == "no-cache" && $0.headers[.eTag] != nil)
            }
            try await client.execute(uri: "/pieces/5", method: .get) { #expect($0.headers[.cacheControl] == "no-store") }
            try await client.execute(uri: "/stats", method: .get) { #expect($0.headers[.cacheControl] == "no-store") }
        }
    }
}
