@testable import EmojiArtApp
import Foundation
import GalleryServer
import Hummingbird
import HummingbirdTesting
import ImageCache
import Synchronization
import Testing
import TestSupport

/// The catalog page rendered once per edition of what it shows and answered from memory with its
/// `ETag`, and a large catalog paged: a page load's cost does not grow with the catalog or with
/// each load. A real gallery on 127.0.0.1, the app's router.
@Suite struct CatalogPageTests {
    func withApp<T: Sendable>(
        catalog: ArtCatalog = .book,
        _ body: @Sendable (any TestClientProtocol, EmojiArtModel, ImagePipeline, CatalogPages) async throws -> T
    ) async throws -> T {
        try await withGallery(catalog: catalog) { galleryURL, pipeline in
            let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
            // Longer than a test here takes on a loaded machine: a load within it asks the gallery
            // nothing (a check would make a new edition of the pages: the feed, "revalidated").
            let model = makeModel(galleryURL, pipeline, feedCheckInterval: .seconds(3600))
            let (router, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: model, pipeline: pipeline)
            await model.loadAndVerify()
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            return try await app.test(.router) { client in try await body(client, model, pipeline, services.catalogPages) }
        }
    }

    struct Page: Sendable {
        var status: HTTPResponse.Status
        var html: String
        var etag: String?
        var cacheControl: String?
    }

    static func get(_ client: any TestClientProtocol, _ uri: String, ifNoneMatch: String? = nil) async throws -> Page {
        var headers: HTTPFields = [:]
        if let ifNoneMatch { headers[.ifNoneMatch] = ifNoneMatch }
        return try await client.execute(uri: uri, method: .get, headers: headers) { response in
            Page(status: response.status, html: String(buffer: response.body), etag: response.headers[.eTag],
                 cacheControl: response.headers[.cacheControl])
        }
    }

    static func cards(_ html: String) -> Int { html.components(separatedBy: "class=\"card\"").count - 1 }

    static func counter(_ id: String, in html: String) -> Int? {
        guard let start = html.range(of: "id=\"\(id)\">") else { return nil }
        return Int(html[start.upperBound...].prefix { $0.isNumber })
    }

    /// The same page twice: the same `ETag`, a `304` to a browser that has it, and the toolbar's
    /// counters as they are at each answer (not as they were when the page was rendered).
    @Test func aPageIsKeptWithItsETagAndItsCountersAreCurrent() async throws {
        try await withApp { client, _, pipeline, pages in
            let warmUp = try await Self.get(client, "/")
            let first = try await Self.get(client, "/")
            #expect(first.status == .ok && Self.cards(first.html) == 87)
            let etag = try #require(first.etag)
            #expect(warmUp.etag == etag, "two loads, nothing changed: one rendering")
            let renders = pages.renders.load(ordering: .relaxed)
            #expect(first.cacheControl == "no-cache")
            let hits = await pipeline.stats().memoryHits
            #expect(Self.counter("memory-hits", in: first.html) == hits)
            #expect(!first.html.contains("counter-"), "no marker is left in the page")
            _ = try await client.execute(uri: "/thumbs/5", method: .get) { $0.status }
            _ = try await client.execute(uri: "/thumbs/5", method: .get) { $0.status }
            let second = try await Self.get(client, "/")
            #expect(second.etag == etag, "nothing the page shows changed")
            #expect(pages.renders.load(ordering: .relaxed) == renders, "answered from memory, not rendered again")
            #expect(await Self.counter("memory-hits", in: second.html) == pipeline.stats().memoryHits)
            #expect(await pipeline.stats().memoryHits > hits)
            let notModified = try await Self.get(client, "/", ifNoneMatch: "W/" + etag)
            #expect(notModified.status == .notModified && notModified.html.isEmpty && notModified.etag == etag)
            #expect(try await Self.get(client, "/", ifNoneMatch: "\"other\"").status == .ok)
        }
    }

    /// A status that changes makes a new edition: the page is rendered again, with a new `ETag`.
    @Test func aChangedStatusRendersThePageAgain() async throws {
        try await withApp { client, model, _, pages in
            let before = try await Self.get(client, "/")
            let renders = pages.renders.load(ordering: .relaxed)
            await model.verifyImages(retryingFailures: true)
            let after = try await Self.get(client, "/")
            #expect(pages.renders.load(ordering: .relaxed) == renders + 1)
            #expect(after.status == .ok && Self.cards(after.html) == 87)
            #expect(after.etag != nil && after.etag != before.etag)
        }
    }

    /// Clearing the disk forgets the kept pages too: the next load renders (and prefetches the
    /// details images of what it shows) again.
    @Test func clearingTheDiskRendersThePageAgain() async throws {
        try await withApp { client, _, _, pages in
            _ = try await Self.get(client, "/")
            _ = try await Self.get(client, "/")
            let renders = pages.renders.load(ordering: .relaxed)
            try await client.execute(uri: "/cache/clear-disk", method: .post) { #expect($0.status == .seeOther) }
            #expect(try await Self.get(client, "/").status == .ok)
            #expect(pages.renders.load(ordering: .relaxed) == renders + 1)
        }
    }

    /// 40 pieces, 120 entries: two pages of at most 100, linked both ways; any other page is 404.
    @Test func aLargeCatalogIsPaged() async throws {
        try await withApp(catalog: try ArtCatalog(pieces: 40)) { client, model, _, _ in
            let total = await model.entries.count
            #expect(total > PageController<BasicRequestContext>.pageSize)
            let first = try await Self.get(client, "/")
            #expect(Self.cards(first.html) == 100)
            #expect(first.html.contains("Page 1 of 2") && first.html.contains("href=\"/?page=2\" rel=\"next\""))
            #expect(!first.html.contains("rel=\"prev\""))
            #expect(first.html.contains("href=\"/pieces/0\"") && !first.html.contains("href=\"/pieces/100\""))
            let second = try await Self.get(client, "/?page=2")
            #expect(Self.cards(second.html) == total - 100)
            #expect(second.html.contains("href=\"/pieces/100\"") && !second.html.contains("href=\"/pieces/99\""))
            #expect(second.html.contains("Page 2 of 2") && second.html.contains("href=\"/\" rel=\"prev\""))
            #expect(second.etag != first.etag)
            #expect(try await Self.get(client, "/?page=1").etag == first.etag)
            for uri in ["/?page=3", "/?page=0", "/?page=-1", "/?page=x", "/?page=1e1", "/?page=99999999999"] {
                #expect(try await Self.get(client, uri).status == .notFound, "\(uri)")
            }
        }
    }

    /// The book's catalog fits one page: no pager.
    @Test func aCatalogOfOnePageHasNoPager() async throws {
        try await withApp { client, _, _, _ in
            let page = try await Self.get(client, "/")
            #expect(page.status == .ok && !page.html.contains("id=\"pager\""))
        }
    }
}
