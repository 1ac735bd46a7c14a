import AsyncHTTPClient
import FastLane
import Hummingbird
@testable import EmojiArtApp
import Foundation
import ImageCache
import Imaging
import NIOCore
import NIOHTTP1
import Testing
import TestSupport

/// The image routes' formats by `Accept`, their densities, and the page that links them, against
/// a real gallery and app (the lane on) and libvips reading back what was sent.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ImageFormatTests {
    static let chromium = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"

    struct Answer {
        let status: Int
        let fields: [String: String]
        let body: [UInt8]
    }

    static func get(_ port: Int, _ path: String, accept: String? = nil, fields: [String: String] = [:]) async throws -> Answer {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        if let accept { request.headers.add(name: "Accept", value: accept) }
        for (name, value) in fields { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 10 << 20)
        var answer: [String: String] = [:]
        for field in response.headers { answer[field.name.lowercased()] = field.value }
        return Answer(status: Int(response.status.code), fields: answer, body: Array(body.readableBytesView))
    }

    /// Waits, on the pipeline's own change stream, until `request`'s image is cached (in memory
    /// or on disk).
    static func waitUntilCached(_ request: ImageRequest, in pipeline: ImagePipeline) async {
        if pipeline.isCached(request) { return }
        for await _ in await pipeline.onSchedulingChange where pipeline.isCached(request) { return }
    }

    /// Waits, likewise, until `request`'s image is in memory: the lane answers it from there.
    static func waitUntilInMemory(_ request: ImageRequest, in pipeline: ImagePipeline) async {
        for await _ in await pipeline.onSchedulingChange where pipeline.memory.peek(request.cacheKey) != nil { return }
    }

    @Test func eachAcceptGetsItsFormatAndEveryAnswerVaries() async throws {
        // Stand-ins: what a request that comes before the warm-up gets (here, none runs).
        try await withVerifiedApp(configure: { $0.warmUpBudget = 0 }) { port, pipeline, services in
            // WebP is made in the background: its first request gets the PNG at once, which no
            // cache may keep.
            let first = try await Self.get(port, "/thumbs/5", accept: "image/webp")
            #expect(first.fields["content-type"] == "image/png" && first.fields["cache-control"] == "no-cache" && first.fields["vary"] == "Accept")
            let webp = try #require(services.variant(piece: 5, kind: .init(route: .thumbs, density: 1, format: .webp))).request
            await Self.waitUntilCached(webp, in: pipeline)

            for (accept, type) in [
                (nil, "image/png"), ("*/*", "image/png"), ("image/png", "image/png"), ("image/webp,*/*", "image/webp"),
                ("image/avif;q=0, image/webp", "image/webp"), ("image/avif;q=0, image/webp;q=0", "image/png"),
            ] as [(String?, String)] {
                let answer = try await Self.get(port, "/thumbs/5", accept: accept)
                #expect(answer.status == 200 && answer.fields["content-type"] == type, "\(accept ?? "(none)")")
                #expect(answer.fields["vary"] == "Accept")
                let info = try Imaging().probe(answer.body)
                #expect(info.format.mimeType == type && max(info.width, info.height) == 200, "\(accept ?? "(none)"): \(info)")
                let notModified = try await Self.get(port, "/thumbs/5", accept: accept, fields: ["If-None-Match": answer.fields["etag"] ?? ""])
                #expect(notModified.status == 304 && notModified.fields["vary"] == "Accept")
            }
            // Each format its own bytes, so its own ETag.
            let png = try await Self.get(port, "/thumbs/5")
            let made = try await Self.get(port, "/thumbs/5", accept: "image/webp")
            #expect(png.fields["etag"] != made.fields["etag"])
            #expect(made.body.count * 2 < png.body.count, "WebP \(made.body.count) bytes, PNG \(png.body.count)")
            // An ETag of another format is no match.
            let other = try await Self.get(port, "/thumbs/5", accept: "image/webp", fields: ["If-None-Match": png.fields["etag"] ?? ""])
            #expect(other.status == 200 && other.fields["content-type"] == "image/webp")
        }
    }

    @Test func aFormatNotMadeYetIsAnsweredAtOnceWithTheBestOneMadeAndIsMadeInTheBackground() async throws {
        try await withGallery { galleryURL, pipeline in
            var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust, httpCache: .immutable)
            configuration.warmUpBudget = 0  // a request that comes before the warm-up
            let model = makeModel(galleryURL, pipeline)
            let (router, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: model, pipeline: pipeline)
            await model.loadAndVerify()
            let lane = FastLane(serverName: "EmojiArt", respond: ImageController<BasicRequestContext>(services: services).fastLane)
            try await withLiveServer({ running in
                Application(
                    responder: router.buildResponder(), server: .http1(fastLane: lane),
                    configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "EmojiArt"),
                    services: services.backgroundServices,
                    onServerRunning: { await running($0.localAddress?.port ?? 0) }
                )
            }) { port in
                let file = try #require(model.feedByPiece.value[7])
                func request(_ route: ImageRoute, _ format: ServedFormat) throws -> ImageRequest {
                    try #require(services.variant(piece: 7, kind: .init(route: route, density: 1, format: format))).request
                }
                let path = services.url(file, route: .thumbs, density: 1)
                let avif = try request(.thumbs, .avif)
                #expect(!pipeline.isCached(avif))

                // Nothing made: the PNG, made now, not immutable (no cache keeps it under the URL).
                let first = try await Self.get(port, path, accept: Self.chromium)
                #expect(first.status == 200 && first.fields["content-type"] == "image/png")
                #expect(first.fields["cache-control"] == "no-cache" && first.fields["vary"] == "Accept")

                // Meanwhile the AVIF is made, at low priority, into memory: the next is the lane's.
                await Self.waitUntilInMemory(avif, in: pipeline)
                let answered = lane.answered
                let second = try await Self.get(port, path, accept: Self.chromium, fields: ["If-None-Match": first.fields["etag"] ?? ""])
                #expect(lane.answered == answered + 1, "a memory hit, answered on the event loop")
                #expect(second.status == 200 && second.fields["content-type"] == "image/avif")
                #expect(second.fields["cache-control"] == "public, max-age=31536000, immutable")
                let info = try Imaging().probe(second.body)
                #expect(info.format == .avif && info.height == 200)
                #expect(second.body.count * 5 < (try await Self.get(port, path)).body.count, "AVIF much smaller than the PNG")

                // The best format already made is the stand-in: the details' WebP, once made,
                // answers a browser while its AVIF is made; never to a client that does not take it.
                let large = services.url(file, route: .large, density: 1)
                let webpFirst = try await Self.get(port, large, accept: "image/webp,*/*")
                #expect(webpFirst.fields["content-type"] == "image/png" && webpFirst.fields["cache-control"] == "no-cache")
                await Self.waitUntilCached(try request(.large, .webp), in: pipeline)
                #expect(!pipeline.isCached(try request(.large, .avif)))
                let standIn = try await Self.get(port, large, accept: Self.chromium)
                #expect(standIn.fields["content-type"] == "image/webp" && standIn.fields["cache-control"] == "no-cache")
                let pngOnly = try await Self.get(port, large, accept: "image/avif,image/png")
                #expect(pngOnly.fields["content-type"] == "image/png" && pngOnly.fields["cache-control"] == "no-cache")
            }
        }
    }

    @Test func theStatsSayWhenTheBackgroundEncodesAreDone() async throws {
        // Stand-ins: what a request that comes before the warm-up gets (here, none runs).
        try await withVerifiedApp(configure: { $0.warmUpBudget = 0 }) { port, pipeline, services in
            let avif = try #require(services.variant(piece: 9, kind: .init(route: .thumbs, density: 2, format: .avif))).request
            let standIn = try await Self.get(port, "/thumbs/2x/9", accept: Self.chromium)
            #expect(standIn.fields["content-type"] == "image/png")
            // The stand-in is sent once its AVIF is listed, and the stream starts with the counts
            // now: its counts say when the AVIF is made, without polling.
            let events = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/events"), timeout: .seconds(30))
            var text = ""
            var encodes: [Int] = []
            eventLoop: for try await chunk in events.body {
                text += String(buffer: chunk)
                while let end = text.range(of: "\n\n") {
                    let message = String(text[..<end.lowerBound])
                    text = String(text[end.upperBound...])
                    guard message.hasPrefix("event: stats\ndata: ") else { continue }
                    let json = try JSONSerialization.jsonObject(with: Data(message.dropFirst("event: stats\ndata: ".count).utf8)) as? [String: Any]
                    let count = try #require(json?["backgroundEncodes"] as? Int)
                    encodes.append(count)
                    if count == 0 { break eventLoop }
                }
            }
            #expect(pipeline.isCached(avif), "made when the count is 0: \(encodes)")
            let stats = try JSONSerialization.jsonObject(with: Data(try await Self.get(port, "/stats").body)) as? [String: Any]
            #expect(stats?["backgroundEncodes"] as? Int == 0 && stats?["memoryHits"] != nil)
            #expect(try await Self.get(port, "/thumbs/2x/9", accept: Self.chromium).fields["content-type"] == "image/avif")
        }
    }

    @Test func oneVariantIsMadeOncePerFormatUnderConcurrencyAndIsOnDiskAfterARestart() async throws {
        // Stand-ins: what a request that comes before the warm-up gets (here, none runs).
        try await withVerifiedApp(configure: { $0.warmUpBudget = 0 }) { port, pipeline, services in
            let before = await pipeline.stats().scheduling.processing.started
            let webp = try #require(services.variant(piece: 4, kind: .init(route: .thumbs, density: 2, format: .webp))).request
            let answers = try await withThrowingTaskGroup(of: Answer.self) { group in
                for index in 0..<24 {
                    let accept = ["image/webp", "image/png", "*/*"][index % 3]
                    group.addTask { try await Self.get(port, "/thumbs/2x/4", accept: accept) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // The 8 that take WebP get the PNG while the WebP is made in the background, then the WebP.
            let types = answers.reduce(into: [:]) { $0[$1.fields["content-type"] ?? "none", default: 0] += 1 }
            #expect(types["image/png", default: 0] >= 16 && types["image/png", default: 0] + types["image/webp", default: 0] == 24, "\(types)")
            #expect(Set(answers.filter { $0.fields["content-type"] == "image/png" }.map(\.body)).count == 1, "one PNG")
            #expect(Set(answers.filter { $0.fields["content-type"] == "image/webp" }.map(\.body)).count <= 1, "one WebP")

            // A new process, as far as the cache knows: the same directory, a new pipeline.
            let disk = try #require(pipeline.disk)
            if !disk.contains(key: webp.cacheKey) {
                // Each disk write that ends is a change.
                for await _ in await pipeline.onSchedulingChange where disk.contains(key: webp.cacheKey) { break }
            }
            #expect(await pipeline.stats().scheduling.processing.started - before == 2, "one WebP and one PNG")
            let directory = disk.directory
            let restarted = ImagePipeline(configuration: .init(diskDirectory: directory, synchronizesWrites: false))
            let image = try await restarted.image(for: webp)
            #expect(image.contentType == "image/webp")
            let stats = await restarted.stats()
            #expect(stats.diskHits == 1 && stats.scheduling.processing.started == 0)
        }
    }

    @Test func twiceTheDensityIsTwiceTheBoxButNeverLargerThanTheOriginal() async throws {
        try await withVerifiedApp { port, _, _ in
            // 360 x 650 art: 360 * 200 / 650 = 110.8 and 360 * 400 / 650 = 221.5, rounded as libvips does.
            for (path, width, height) in [
                ("/thumbs/5", 111, 200), ("/thumbs/2x/5", 222, 400), ("/large/5", 332, 600), ("/large/2x/5", 360, 650),
            ] {
                for accept in ["image/webp", "image/png"] {
                    let info = try Imaging().probe(try await Self.get(port, path, accept: accept).body)
                    #expect(info.width == width && info.height == height, "\(path), \(accept): \(info.width)x\(info.height)")
                }
            }
        }
    }

    @Test func thePageOffersBothDensitiesWithSizesAndLoadsTheFirstScreenFirst() async throws {
        try await withVerifiedApp { port, _, _ in
            let page = String(decoding: try await Self.get(port, "/").body, as: UTF8.self)
            let images = page.components(separatedBy: "<img ").dropFirst().map { String($0.prefix { $0 != ">" }) }
            #expect(images.count == 78)
            for image in images {
                let src = try #require(image.firstMatch(of: /src="([^"]+)"/)?.1)
                #expect(image.contains(#"srcset="\#(src) 1x, "#) && image.contains(#" 2x""#) && image.contains("/thumbs/2x/"), "\(image)")
                #expect(image.contains(#"decoding="async""#))
            }
            // The size each image states is the size it comes in: the page does not shift as they
            // arrive (it said 110 for thumbnails 111 wide).
            let served = try Imaging().probe(try await Self.get(port, "/thumbs/5").body)
            #expect(images.allSatisfy { $0.contains(#"width="\#(served.width)" height="\#(served.height)""#) }, "\(served.width)x\(served.height): \(images[0])")
            let large = try Imaging().probe(try await Self.get(port, "/large/5").body)
            var detailsShown = 0
            for index in 0..<10 {
                let details = String(decoding: try await Self.get(port, "/pieces/\(index)").body, as: UTF8.self)
                guard details.contains(#"id="large""#) else { continue }  // a missing piece shows no image
                detailsShown += 1
                #expect(details.contains(#"width="\#(large.width)" height="\#(large.height)""#), "\(large.width)x\(large.height)")
            }
            #expect(detailsShown > 0)
            #expect(images.prefix(5).allSatisfy { $0.contains(#"fetchpriority="high""#) && !$0.contains("loading=") })
            #expect(images.suffix(40).allSatisfy { $0.contains(#"loading="lazy""#) && !$0.contains("fetchpriority") })
        }
    }
}
