import Crypto
import Foundation
import GalleryServer
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Imaging
import NIOFoundationEssentialsCompat
import Testing
import TestSupport
import GalleryFeed

@Suite struct GalleryRouteTests {
    func gallery(_ configuration: GalleryConfiguration = .init(port: 0)) async throws -> some ApplicationProtocol {
        try await Gallery.buildApplication(configuration)
    }

    func feed(_ client: some TestClientProtocol) async throws -> [ImageFile] {
        try await client.execute(uri: "/gallery/images", method: .get) { response in
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
            return try JSONDecoder().decode([ImageFile].self, from: Data(buffer: response.body))
        }
    }

    @Test func feedListsEachOfTwentyNinePiecesThreeTimes() async throws {
        try await gallery().test(.router) { client in
            let feed = try await feed(client)
            #expect(feed.count == 87)
            let byURL = Dictionary(grouping: feed, by: \.url)
            #expect(byURL.count == 29)
            #expect(byURL.values.allSatisfy { $0.count == 3 })
            #expect(Set(byURL.keys) == Set((0..<29).map { "/gallery/image?\($0)" }))
            #expect(feed.first { $0.url == "/gallery/image?0" }?.name == "Grinning Face")
            for entry in feed {
                #expect((5...1000).contains(entry.price))
                #expect(abs((entry.price * 100).rounded() - entry.price * 100) < 1e-6, "price \(entry.price) has more than two decimals")
                #expect(entry.checksum.hasPrefix("sha256:") && entry.checksum.count == 7 + 64)
                #expect(entry.name.first?.isUppercase == true && entry.name != entry.name.uppercased())
            }
            // Shuffled: not the three copies in piece order.
            #expect(feed.map(\.url) != (0..<87).map { "/gallery/image?\($0 % 29)" })
        }
    }

    @Test func feedIsDeterministicPerSeed() async throws {
        let first = try await gallery(.init(port: 0, seed: 7)).test(.router) { try await feed($0) }
        let again = try await gallery(.init(port: 0, seed: 7)).test(.router) { try await feed($0) }
        let other = try await gallery(.init(port: 0, seed: 8)).test(.router) { try await feed($0) }
        #expect(first == again)
        #expect(first != other)
    }

    @Test func everyServedImageMatchesItsChecksum() async throws {
        try await gallery().test(.router) { client in
            let feed = try await feed(client)
            let checksums = Dictionary(feed.map { ($0.url, $0.checksum) }, uniquingKeysWith: { first, _ in first })
            for piece in ArtCatalog.book.served {
                let url = "/gallery/image?\(piece)"
                try await client.execute(uri: url, method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == "image/png")
                    let bytes = [UInt8](buffer: response.body)
                    let hex = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
                    #expect("sha256:\(hex)" == checksums[url])
                    #expect(response.headers[.eTag] == "\"\(hex)\"")
                    let info = try Imaging().probe(bytes)
                    #expect(info.format == .png && info.width == 360 && info.height == 650)
                }
            }
        }
    }

    @Test(arguments: [0, 10, 20])
    func missingPiecesAnswerA404WithJSON(piece: Int) async throws {
        try await gallery().test(.router) { client in
            let imageCacheControl = try await client.execute(uri: "/gallery/image?1", method: .get) { $0.headers[.cacheControl] }
            try await client.execute(uri: "/gallery/image?\(piece)", method: .get) { response in
                #expect(response.status == .notFound)
                let body = String(buffer: response.body)
                #expect(body.contains("\"error\"") && body.contains("missing"))
                // The images' own lifetime: a cache remembers the piece is missing as long as it
                // keeps a piece it has.
                #expect(imageCacheControl != nil)
                #expect(response.headers[.cacheControl] == imageCacheControl)
            }
        }
    }

    @Test(arguments: [
        ("", HTTPResponse.Status.badRequest),
        ("abc", .badRequest),
        ("-1", .notFound),
        ("29", .notFound),
        ("1000000", .notFound),
        (String(repeating: "9", count: 5000), .badRequest),
        ("1&2", .badRequest),
        ("N=5", .badRequest),
        ("5%00", .badRequest),
    ])
    func badPieceNumbersAreClientErrors(query: String, status: HTTPResponse.Status) async throws {
        try await gallery().test(.router) { client in
            try await client.execute(uri: "/gallery/image?\(query)", method: .get) { response in
                #expect(response.status == status)
                #expect(String(buffer: response.body).contains("\"error\""))
            }
        }
    }

    @Test func etagAnswersNotModifiedAndHeadHasNoBody() async throws {
        try await gallery().test(.router) { client in
            let etag = try await client.execute(uri: "/gallery/image?5", method: .get) { response in
                #expect(response.headers[.cacheControl]?.contains("max-age") == true)
                return try #require(response.headers[.eTag])
            }
            try await client.execute(uri: "/gallery/image?5", method: .get, headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
            }
            try await client.execute(uri: "/gallery/image?5", method: .get, headers: [.ifNoneMatch: "\"other\", \(etag)"]) { response in
                #expect(response.status == .notModified)
            }
            try await client.execute(uri: "/gallery/image?6", method: .get, headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/gallery/image?5", method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/png")
                #expect(response.body.readableBytes == 0)
            }
        }
    }

    @Test func answersCarryMaxAgeAndLastModifiedAndHonourIfModifiedSince() async throws {
        let published = Date(timeIntervalSince1970: 1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT
        let configuration = GalleryConfiguration(port: 0, now: { published }, maxAge: 120)
        try await gallery(configuration).test(.router) { client in
            let etag = try await client.execute(uri: "/gallery/image?5", method: .get) { response in
                #expect(response.headers[.cacheControl] == "public, max-age=120")
                #expect(response.headers[.lastModified] == "Tue, 14 Nov 2023 22:13:20 GMT")
                return try #require(response.headers[.eTag])
            }
            let cases: [(HTTPFields, HTTPResponse.Status)] = [
                ([.ifModifiedSince: "Tue, 14 Nov 2023 22:13:20 GMT"], .notModified),
                ([.ifModifiedSince: "Wed, 15 Nov 2023 08:00:00 GMT"], .notModified),
                ([.ifModifiedSince: "Tue, 14 Nov 2023 22:13:19 GMT"], .ok),
                ([.ifModifiedSince: "yesterday"], .ok),
                // If-None-Match decides alone when both are sent (RFC 9110 13.2.2).
                ([.ifNoneMatch: "\"other\"", .ifModifiedSince: "Wed, 15 Nov 2023 08:00:00 GMT"], .ok),
                ([.ifNoneMatch: etag, .ifModifiedSince: "Tue, 14 Nov 2023 22:13:19 GMT"], .notModified),
            ]
            for (headers, status) in cases {
                try await client.execute(uri: "/gallery/image?5", method: .get, headers: headers) { response in
                    #expect(response.status == status, "\(headers)")
                    if status == .notModified { #expect(response.body.readableBytes == 0) }
                }
            }
            try await client.execute(uri: "/gallery/images", method: .get, headers: [.ifModifiedSince: "Tue, 14 Nov 2023 22:13:20 GMT"]) { response in
                #expect(response.status == .notModified)
                #expect(response.headers[.lastModified] == "Tue, 14 Nov 2023 22:13:20 GMT")
            }
        }
    }

    @Test func theFeedsETagIsTheHashOfItsBytes() async throws {
        try await gallery().test(.router) { client in
            try await client.execute(uri: "/gallery/images", method: .get) { response in
                let hex = SHA256.hash(data: [UInt8](buffer: response.body)).map { String(format: "%02x", $0) }.joined()
                #expect(response.headers[.eTag] == "\"\(hex)\"")
                #expect(response.headers[.cacheControl] == "no-cache")
            }
        }
    }

    @Test func metricsCountRequestsPerPieceAndRoute() async throws {
        try await gallery().test(.router) { client in
            var bytes = 0
            for _ in 0..<3 { bytes += try await client.execute(uri: "/gallery/image?7", method: .get).body.readableBytes }
            _ = try await client.execute(uri: "/gallery/image?10", method: .get)
            bytes += try await client.execute(uri: "/gallery/images", method: .get).body.readableBytes
            let text = try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                return String(buffer: response.body)
            }
            #expect(text.contains(#"gallery_image_requests_total{piece="7"} 3"#))
            #expect(text.contains(#"gallery_image_requests_total{piece="10"} 1"#))
            #expect(text.contains(#"gallery_http_requests_total{route="/gallery/image",status="200"} 3"#))
            #expect(text.contains(#"gallery_http_requests_total{route="/gallery/image",status="404"} 1"#))
            #expect(text.contains(#"gallery_http_requests_total{route="/gallery/images",status="200"} 1"#))
            #expect(text.contains("gallery_bytes_served_total \(bytes)"), "\(text)")
            #expect(text.contains("gallery_render_duration_seconds_count 1"), "\(text)")
        }
    }

    @Test func healthSaysOK() async throws {
        try await gallery().test(.router) { client in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("\"ok\""))
            }
        }
    }

    @Test func failureRateOneAnswersEveryImageWith500() async throws {
        let faults = FaultInjection(failureRate: 1)
        try await gallery(.init(port: 0, faults: faults)).test(.router) { client in
            for piece in [1, 2, 3] {
                try await client.execute(uri: "/gallery/image?\(piece)", method: .get) { response in
                    #expect(response.status == .internalServerError)
                }
            }
            // The feed is not an image request: unaffected.
            #expect(try await feed(client).count == 87)
        }
    }

    @Test func failureRateIsSeededAndRoughlyRight() async throws {
        func statuses(seed: UInt64) async throws -> [UInt] {
            try await gallery(.init(port: 0, faults: .init(failureRate: 0.5, seed: seed))).test(.router) { client in
                var codes: [UInt] = []
                for _ in 0..<40 {
                    codes.append(UInt(try await client.execute(uri: "/gallery/image?1", method: .get).status.code))
                }
                return codes
            }
        }
        let first = try await statuses(seed: 3)
        #expect(try await statuses(seed: 3) == first)
        let failures = first.filter { $0 == 500 }.count
        #expect((8...32).contains(failures), "\(failures) of 40 failed at rate 0.5")
    }

    @Test func corruptRateOneServesWholeBodiesThatFailTheirChecksum() async throws {
        try await gallery(.init(port: 0, faults: .init(corruptRate: 1))).test(.router) { client in
            let feed = try await feed(client)
            let entry = try #require(feed.first { $0.url == "/gallery/image?8" })
            try await client.execute(uri: entry.url, method: .get) { response in
                #expect(response.status == .ok)
                let bytes = [UInt8](buffer: response.body)
                #expect(response.headers[.contentLength] == "\(bytes.count)")
                let hex = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
                #expect(entry.checksum != "sha256:\(hex)")
            }
        }
    }

    @Test func latencyHoldsEachImageRequestForItsDurationOnTheGalleryClock() async throws {
        let clock = ManualClock()
        let configuration = GalleryConfiguration(port: 0, faults: .init(latency: .milliseconds(150)), clock: clock)
        try await gallery(configuration).test(.router) { (client) async throws in
            async let answer = client.execute(uri: "/gallery/image?1", method: .get)
            await clock.waitForSleepers(1)
            clock.advance(by: .milliseconds(149))
            #expect(clock.sleeperCount == 1, "answered before its latency was up")
            clock.advance(by: .milliseconds(1))
            #expect(try await answer.status == .ok)
            // The feed is not an image request: it never waits.
            #expect(try await feed(client).count == 87)
        }
    }

    @Test func heldImageRequestsAnswerOnlyAsTheyAreReleased() async throws {
        let gate = ImageGate()
        try await gallery(.init(port: 0, imageGate: gate)).test(.router) { client in
            // The feed and the control routes never wait.
            #expect(try await feed(client).count == 87)
            let pieces = [1, 2, 10]
            try await withThrowingTaskGroup(of: (Int, HTTPResponse.Status).self) { group in
                for piece in pieces {
                    group.addTask { (piece, try await client.execute(uri: "/gallery/image?\(piece)", method: .get).status) }
                }
                try await client.execute(uri: "/gallery/test/release?count=2", method: .post) { response in
                    #expect(response.status == .ok)
                }
                var statuses: [Int: HTTPResponse.Status] = [:]
                for _ in 0..<2 {
                    let (piece, status) = try #require(try await group.next())
                    statuses[piece] = status
                }
                // Exactly one is still held: nothing answers until the next release.
                #expect(gate.status.passed == 2)
                try await client.execute(uri: "/gallery/test/gate", method: .get) { response in
                    let status = try JSONDecoder().decode(ImageGate.Status.self, from: Data(buffer: response.body))
                    #expect(status.passed == 2 && status.permits == 0 && !status.open)
                }
                try await client.execute(uri: "/gallery/test/open", method: .post) { response in
                    #expect(response.status == .ok)
                }
                let (piece, status) = try #require(try await group.next())
                statuses[piece] = status
                // Missing pieces wait too, and still answer 404 once let through.
                #expect(statuses == [1: .ok, 2: .ok, 10: .notFound])
            }
            try await client.execute(uri: "/gallery/test/release?count=0", method: .post) { response in
                #expect(response.status == .badRequest)
            }
        }
    }

    /// No web page may hold, release or open the gate or publish new art: any request with
    /// `Origin`, or `Sec-Fetch-Site` other than `none`, is refused and changes nothing, whatever
    /// its site (a page at a name rebound to the gallery's address says `same-origin`).
    @Test func noWebPageMayUseTheTestRoutes() async throws {
        let gate = ImageGate()
        try await gallery(.init(port: 0, imageGate: gate, revisionInterval: .zero)).test(.router) { client in
            let edition = try await client.execute(uri: "/gallery/images", method: .get) { $0.headers[.eTag] }
            let site = HTTPField.Name("Sec-Fetch-Site")!
            let pages: [HTTPFields] = [
                [.origin: "http://evil.example"], [.origin: "null"],
                [site: "cross-site"], [site: "same-origin"],
            ]
            for fields in pages {
                for (uri, method) in [("/gallery/test/open", HTTPRequest.Method.post), ("/gallery/test/release?count=5", .post),
                                      ("/gallery/test/revise", .post), ("/gallery/test/gate", .get)] {
                    try await client.execute(uri: uri, method: method, headers: fields) { response in
                        #expect(response.status == .forbidden, "\(method) \(uri) with \(fields)")
                        #expect(String(buffer: response.body).contains("answer no web page"))
                    }
                }
            }
            #expect(gate.status.permits == 0 && !gate.status.open)
            #expect(try await client.execute(uri: "/gallery/images", method: .get) { $0.headers[.eTag] } == edition)
            // An address typed by hand (`none`) and a script (no fields) pass.
            try await client.execute(uri: "/gallery/test/release?count=5", method: .post, headers: [site: "none"]) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/gallery/test/revise", method: .post) { #expect($0.status == .ok) }
            #expect(gate.status.permits == 5)
            #expect(try await client.execute(uri: "/gallery/images", method: .get) { $0.headers[.eTag] } != edition)
        }
    }

    @Test func theGateRoutesExistOnlyWhenTheGateIsOn() async throws {
        try await gallery().test(.router) { client in
            try await client.execute(uri: "/gallery/test/open", method: .post) { response in
                #expect(response.status == .notFound)
            }
        }
    }
}
