import AsyncHTTPClient
import Crypto
import Foundation
import GalleryServer
import NIOCore
import NIOFoundationEssentialsCompat
import NIOHTTP1
import Testing
import TestSupport
import GalleryFeed

@Suite struct GalleryLiveTests {
    @Test func realClientFetchesFeedAndImageOverASocket() async throws {
        try await withLiveServer({ try await Gallery.buildApplication(.init(port: 0), onServerRunning: $0) }) { port in
            let base = "http://127.0.0.1:\(port)"
            let feedResponse = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/gallery/images"), timeout: .seconds(30))
            #expect(feedResponse.status == .ok)
            let feed = try JSONDecoder().decode([ImageFile].self, from: Data(buffer: try await feedResponse.body.collect(upTo: 1 << 20)))
            #expect(feed.count == 87)
            let entry = try #require(feed.first { $0.url == "/gallery/image?9" })
            let image = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + entry.url), timeout: .seconds(30))
            #expect(image.status == .ok)
            let bytes = try await image.body.collect(upTo: 10 << 20)
            let hex = SHA256.hash(data: [UInt8](buffer: bytes)).map { String(format: "%02x", $0) }.joined()
            #expect(entry.checksum == "sha256:\(hex)")
            #expect(image.headers.first(name: "content-length") == "\(bytes.readableBytes)")
        }
    }

    @Test func truncationFaultCutsTheBodyShortOfItsContentLength() async throws {
        let configuration = GalleryConfiguration(port: 0, faults: .init(truncateRate: 1))
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/gallery/image?4")
            await #expect(throws: (any Error).self) {
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                #expect(response.status == .ok)
                let declared = Int(response.headers.first(name: "content-length") ?? "") ?? 0
                #expect(declared > 0)
                _ = try await response.body.collect(upTo: 10 << 20)
            }
        }
    }
}
