import AsyncHTTPClient
@testable import FastLane
import Foundation
import Hummingbird
import HTTPTypes
import ImageCache
@testable import ImageService
import Imaging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization
import Testing
import TestSupport

/// The image service end to end: a real origin on 127.0.0.1 (allowed explicitly, loopback
/// included) serving real images, the service on a real socket, real libvips, a real HTTP client.
@Suite(.timeLimit(.minutes(3))) struct ServiceTests {
    static let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
    static let signer = try! Signer(keyHex: key, saltHex: salt)

    static func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ImagingTests/Fixtures/\(name)")
        return Array(try Data(contentsOf: url))
    }

    /// A running service in front of `origin`, and what a test asks it with.
    struct Running: Sendable {
        let base: String
        let origin: URL
        let server: ImageServer

        /// The signed URL of `source` (a name the origin serves) under `options`.
        func url(_ options: [String], _ name: String, extension fileExtension: String? = nil, encoding: Signer.SourceEncoding = .plain) -> String {
            base + ServiceTests.signer.path(options: options, source: origin.absoluteString + "/images/" + name, extension: fileExtension, encoding: encoding)
        }

        func get(_ url: String, headers: [(String, String)] = []) async throws -> (status: Int, headers: HTTPHeaders, body: [UInt8]) {
            var request = HTTPClientRequest(url: url)
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 64 << 20)
            return (Int(response.status.code), response.headers, Array(buffer: body))
        }
    }

    /// Runs the service (signed, the origin allowed, loopback allowed by name) until `body` ends.
    static func withService<T: Sendable>(
        _ origin: TestOrigin, maxSourceBytes: Int = 64 << 20, maxSourceMegapixels: Double = 50,
        change: @Sendable (inout ImageServiceConfiguration) -> Void = { _ in },
        _ body: @Sendable (Running) async throws -> T
    ) async throws -> T {
        try await origin.run { originURL in
            let directory = TemporaryDirectory("image-service")
            var configuration = ImageServiceConfiguration(
                signing: .required(signer),
                sources: SourcePolicy(allowedSources: [originURL.absoluteString + "/"], allowsLoopback: true, maxSourceBytes: maxSourceBytes, timeout: .seconds(60)),
                presets: ["thumb": "rs:fill:120:120"], maxSourceMegapixels: maxSourceMegapixels
            )
            change(&configuration)
            let server = try ImageServer(configuration: configuration, pipeline: ImageServer.makePipeline(configuration, diskDirectory: directory.url))
            return try await withLiveServer({ onRunning in
                await ImageService.buildApplication(server, configuration: .init(port: 0), onServerRunning: onRunning)
            }) { port in
                try await body(Running(base: "http://127.0.0.1:\(port)", origin: originURL, server: server))
            }
        }
    }

    @Test func aSignedURLGetsAThumbnailOfAPhotoWithItsCachingFields() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        try await Self.withService(origin) { service in
            let answer = try await service.get(service.url(["rs:fit:300:300"], "photo.jpg"))
            #expect(answer.status == 200)
            #expect(answer.headers.first(name: "content-type") == "image/jpeg", "the source's own format")
            let info = try Imaging().probe(answer.body)
            #expect(info.format == .jpeg && info.width == 300 && info.height == 225)
            #expect(answer.headers.first(name: "cache-control") == "public, max-age=31536000")
            #expect(answer.headers.first(name: "vary") == "Accept")
            let etag = try #require(answer.headers.first(name: "etag"))
            #expect(etag == "\"" + SHA256Hex.digest(answer.body) + "\"")

            let again = try await service.get(service.url(["rs:fit:300:300"], "photo.jpg"), headers: [("If-None-Match", etag)])
            #expect(again.status == 304 && again.body.isEmpty && again.headers.first(name: "etag") == etag)
            #expect(origin.requests("photo.jpg") == 1)
        }
    }

    @Test func twoSpellingsOfOneProcessingAreOneEntryAndOneSourceFetchServesEveryVariant() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        try await Self.withService(origin) { service in
            // Three variants at once: the source is fetched once for all.
            let urls = [
                service.url(["rs:fit:200:200"], "photo.jpg"), service.url(["rs:fill:100:100", "g:sm"], "photo.jpg"),
                service.url(["w:150", "dpr:2"], "photo.jpg", encoding: .base64),
            ]
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for url in urls { group.addTask { try await service.get(url).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == [200, 200, 200])
            #expect(origin.requests("photo.jpg") == 1)

            // Another spelling of the first: the same bytes, from memory.
            let first = try await service.get(urls[0])
            let before = await service.server.pipeline.stats().memoryHits
            let other = try await service.get(service.url(["resize:fit:200:200:0", "gravity:ce"], "photo.jpg", encoding: .base64))
            #expect(other.status == 200 && other.body == first.body)
            #expect(await service.server.pipeline.stats().memoryHits == before + 1)
            #expect(await service.server.pipeline.stats().memoryEntries == 4, "the source and three variants")
        }
    }

    @Test func theFormatFollowsAcceptUnlessTheURLNamesOne() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        origin.set("alpha.png", .image(try Self.fixture("rgba.png")))
        try await Self.withService(origin) { service in
            let webp = try await service.get(service.url(["rs:fit:64:64"], "photo.jpg"), headers: [("Accept", "image/webp,*/*")])
            #expect(webp.headers.first(name: "content-type") == "image/webp" && webp.headers.first(name: "vary") == "Accept")
            let any = try await service.get(service.url(["rs:fit:64:64"], "photo.jpg"), headers: [("Accept", "*/*")])
            #expect(any.headers.first(name: "content-type") == "image/jpeg", "a wildcard is no promise of WebP")
            let png = try await service.get(service.url(["rs:fit:64:64"], "alpha.png"))
            #expect(png.headers.first(name: "content-type") == "image/png", "the source's own format")
            let named = try await service.get(service.url(["rs:fit:64:64"], "photo.jpg", extension: "png"), headers: [("Accept", "image/avif,image/webp")])
            #expect(named.headers.first(name: "content-type") == "image/png" && named.headers.first(name: "vary") == nil)
            #expect(try Imaging().probe(named.body).format == .png)
        }
    }

    @Test func aFilenameAndAnExpiryShapeTheAnswer() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        try await Self.withService(origin) { service in
            let named = try await service.get(service.url(["rs:fit:64:64", "fn:holiday"], "photo.jpg"))
            #expect(named.headers.first(name: "content-disposition") == "inline; filename=\"holiday.jpg\"")
            let soon = Int(Date().timeIntervalSince1970) + 120
            let expiring = try await service.get(service.url(["rs:fit:64:64", "exp:\(soon)"], "photo.jpg"))
            let maxAge = expiring.headers.first(name: "cache-control").flatMap { Int($0.split(separator: "=").last ?? "") } ?? -1
            #expect(expiring.status == 200 && (0...120).contains(maxAge), "kept no longer than the URL lives: \(maxAge)")
            let expired = try await service.get(service.url(["rs:fit:64:64", "exp:\(soon - 3600)"], "photo.jpg"))
            #expect(expired.status == 404 && expired.headers.first(name: "cache-control") == "no-store")
        }
    }

    /// A path answered before is taken from the recent loads (no second decoding), and is still
    /// judged for its expiry at each request.
    @Test func aRememberedPathIsStillJudgedForItsExpiry() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        try await Self.withService(origin) { service in
            let expires = Int64(Date().timeIntervalSince1970) + 60
            let path = Self.signer.path(options: ["rs:fit:64:64", "exp:\(expires)"], source: service.origin.absoluteString + "/images/photo.jpg")
            let first = await service.server.answer(path: path, accept: nil, ifNoneMatch: nil)
            #expect(first.status == .ok)
            #expect(service.server.recentLoads.load(path, .sourceFormat) != nil, "remembered")
            let later = await service.server.answer(path: path, accept: nil, ifNoneMatch: nil, now: Date(timeIntervalSince1970: Double(expires + 1)))
            #expect(later.status == .notFound)
        }
    }

    /// A variant read back from the disk cache says its own type: one planted there as
    /// `text/html` (script on the service's origin, the app's inside the app) goes out as
    /// `application/octet-stream`, with `nosniff`.
    @Test func aVariantReadBackFromDiskIsSentOnlyAsAnImageType() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        try await Self.withService(origin) { service in
            let url = service.url(["rs:fit:64:64"], "photo.jpg")
            let path = String(url.dropFirst(service.base.count))
            let key = try service.server.prepare(path: path, accept: nil, now: Date()).request.cacheKey
            let pipeline = service.server.pipeline
            await pipeline.setUp()
            await pipeline.store(image: Image(data: Array("<script>alert(1)</script>".utf8), contentType: "text/html"), forKey: key)
            await pipeline.flush()
            await pipeline.clearMemory()
            let answer = try await service.get(url)
            #expect(answer.headers.first(name: "content-type") == "application/octet-stream", "\(answer.headers)")
            #expect(answer.headers.first(name: "x-content-type-options") == "nosniff")
        }
    }

    /// Each refusal: its status, a text that says what to do, nothing kept, never the source's bytes.
    @Test func everyRefusalHasItsStatusAndSaysWhatToDo() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        let page = Array("<html><body>not an image</body></html>".utf8)
        origin.set("page.jpg", .image(page, contentType: "image/jpeg"))
        origin.set("broken.jpg", .status(500))
        origin.set("small.png", .image(try Self.fixture("rgba.png")))
        try await Self.withService(origin, maxSourceBytes: 16 << 10) { service in
            let good = service.url(["rs:fit:64:64"], "photo.jpg")
            var forged = Array(good.utf8)
            let signatureStart = service.base.utf8.count + 1
            forged[signatureStart] = forged[signatureStart] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let cases: [(String, Int, String)] = [
                (String(decoding: forged, as: UTF8.self), 403, "signature"),
                (service.base + "/insecure/rs:fit:64:64/plain/" + service.origin.absoluteString + "/images/photo.jpg", 403, "signature"),
                (service.base + Self.signer.path(options: ["rs:fit:64:64", "wat:1"], source: service.origin.absoluteString + "/images/photo.jpg"), 400, "wat"),
                (good + "?x=1", 400, "query"),
                (service.url(["rs:fit:64:64"], "missing.jpg"), 404, "missing.jpg"),
                (service.url(["rs:fit:64:64"], "broken.jpg"), 502, "500"),
                (service.url(["rs:fit:64:64"], "page.jpg"), 422, "not an image"),
                // An enlargement past the side limit (8192 x 8), an extension past the pixel limit
                // (50 MP): refused before decoding.
                (service.url(["rs:fit:8192:8192:1", "dpr:8"], "small.png"), 422, "smaller size"),
                (service.url(["ex:1:ce", "rs:fit:8192:8192"], "small.png"), 422, "smaller size"),  // 67 MP, sides within
                (service.base + Self.signer.path(options: ["rs:fit:64:64"], source: "http://example.com/x.jpg"), 404, "allowed sources"),
            ]
            for (url, status, words) in cases {
                let answer = try await service.get(url)
                let text = String(decoding: answer.body, as: UTF8.self)
                #expect(answer.status == status, "\(url): \(text)")
                #expect(text.contains(words) && answer.headers.first(name: "content-type") == "text/plain; charset=utf-8", "\(url): \(text)")
                #expect(answer.headers.first(name: "cache-control") == "no-store")
                #expect(!text.contains("<html>"), "never the source's bytes")
            }
            // The photo (27 KiB) is larger than this service's 16 KiB: 413, from its length.
            let large = try await service.get(good)
            #expect(large.status == 413, "\(String(decoding: large.body, as: UTF8.self))")
        }
    }

    @Test func aSourceOverTheResolutionLimitIsRefusedFromItsHeader() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        // 1024x768 is 0.79 MP: over a limit of 0.5.
        try await Self.withService(origin, maxSourceMegapixels: 0.5) { service in
            let answer = try await service.get(service.url(["rs:fit:64:64"], "photo.jpg"))
            #expect(answer.status == 413, "\(String(decoding: answer.body, as: UTF8.self))")
        }
    }

    /// Processing past the time limit is stopped inside libvips and answered 503; the failure is
    /// remembered, so asking again costs no second processing.
    @Test func processingPastTheTimeLimitIsStoppedAndAnswered503() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        try await Self.withService(origin, change: { $0.processingTimeLimit = .zero }) { service in
            let url = service.url(["rs:fit:2048:2048:1", "bl:20"], "photo.jpg")
            let first = try await service.get(url)
            #expect(first.status == 503 && String(decoding: first.body, as: UTF8.self).contains("took longer"), "\(String(decoding: first.body, as: UTF8.self))")
            let again = try await service.get(url)
            #expect(again.status == 503)
            #expect(await service.server.pipeline.stats().failures >= 1)
            #expect(origin.requests("photo.jpg") == 1)
        }
    }

    @Test func healthAndMetricsCountRequestsFetchesAndProcessing() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        try await Self.withService(origin) { service in
            #expect(try await service.get(service.base + "/health").status == 200)
            _ = try await service.get(service.url(["rs:fit:64:64"], "photo.jpg"))
            _ = try await service.get(service.url(["rs:fit:64:64"], "photo.jpg"))
            _ = try await service.get(service.base + "/AAAA/rs:fit:64:64/plain/x")
            let text = String(decoding: try await service.get(service.base + "/metrics").body, as: UTF8.self)
            #expect(text.contains(#"emojiart_image_service_requests_total{status="200"} 2"#), "\(text)")
            #expect(text.contains(#"emojiart_image_service_requests_total{status="403"} 1"#), "\(text)")
            #expect(text.contains("emojiart_image_service_source_fetches_total 1"), "\(text)")
            #expect(text.contains("emojiart_image_service_processing_duration_seconds_count 1"), "\(text)")
        }
    }

    @Test func unsignedURLsAreTakenOnlyWhenTheOperatorSaysSo() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.fixture("landscape.jpg"), contentType: "image/jpeg"))
        try await Self.withService(origin, change: { $0.signing = .unsignedAllowed }) { service in
            let answer = try await service.get(service.base + "/insecure/pr:thumb/plain/" + service.origin.absoluteString + "/images/photo.jpg")
            #expect(answer.status == 200)
            let info = try Imaging().probe(answer.body)
            #expect(info.width == 120 && info.height == 120, "the preset's fill")
        }
    }
}

/// The service's memory hits on the event loop (``ImageServer/fastLane``): twin servers on one
/// router and one service, one with the lane and one without, asked the same over raw connections.
@Suite(.timeLimit(.minutes(3))) struct ServiceFastLaneTests {
    @Test func aMemoryHitIsAnsweredByTheLaneByteForByteAsTheRouteAnswersIt() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try ServiceTests.fixture("landscape.jpg"), contentType: "image/jpeg"))
        try await ServiceTests.withService(origin) { service in
            let lane = FastLane(serverName: "EmojiArt-ImageService", respond: service.server.fastLane)
            let responder = ImageService.buildRouter(service.server).buildResponder()
            func server(_ lane: FastLane?, _ running: @escaping @Sendable (Int) async -> Void) -> some Service {
                Application(
                    responder: responder, server: .http1(fastLane: lane),
                    configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "EmojiArt-ImageService"),
                    onServerRunning: { await running($0.localAddress?.port ?? 0) }
                )
            }
            let path = String(service.url(["rs:fit:120:120"], "photo.jpg", encoding: .base64).dropFirst(service.base.count))
            func ask(_ port: Int, _ fields: [String] = []) async throws -> RawHTTPResponse {
                try await RawHTTPConnection.with(port: port) { connection in
                    try await connection.send([path], fields: ["Host: 127.0.0.1"] + fields)
                    return try #require(try await connection.response())
                }
            }
            try await withLiveServer({ server(lane, $0) }) { lanePort in
                try await withLiveServer({ server(nil, $0) }) { plainPort in
                    let made = try await ask(plainPort)  // a miss: made by the route
                    #expect(made.status == 200)
                    let hit = try await ask(lanePort)
                    #expect(lane.answers.count.load(ordering: .relaxed) == 1, "the lane answered the hit")
                    #expect(hit.without(["date"]) == made.without(["date"]))
                    #expect(try await ask(plainPort).without(["date"]) == hit.without(["date"]))
                    let etag = try #require(hit.fields.first { $0.name.lowercased() == "etag" }?.value)
                    let notModified = try await ask(lanePort, ["If-None-Match: \(etag)"])
                    #expect(notModified.status == 304 && notModified.body.isEmpty)
                    #expect(try await ask(plainPort, ["If-None-Match: \(etag)"]).without(["date"]) == notModified.without(["date"]))
                    // Not in memory in WebP yet: passed on, made by the route.
                    let webp = try await ask(lanePort, ["Accept: image/webp"])
                    #expect(webp.status == 200 && lane.answers.count.load(ordering: .relaxed) == 2)
                    #expect(webp.fields.contains { $0.name.lowercased() == "content-type" && $0.value == "image/webp" })
                }
            }
        }
    }
}
