import AsyncHTTPClient
import Crypto
import Foundation
import GalleryServer
import HTTPCaching
import NIOCore
import NIOFoundationEssentialsCompat
import NIOHTTP1
import Testing
import TestSupport
import GalleryFeed

/// New art at unchanged URLs, and the gallery's dates from its injected clock, over a socket.
@Suite(.timeLimit(.minutes(3))) struct GalleryRevisionTests {
    struct Answer: Sendable {
        var status: UInt
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    func get(_ url: String, _ headers: [(String, String)] = [], method: HTTPMethod = .GET) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 10 << 20)
        return Answer(status: response.status.code, headers: response.headers, body: [UInt8](buffer: body))
    }

    func checksums(_ feed: [UInt8]) throws -> [String: String] {
        let entries = try JSONDecoder().decode([ImageFile].self, from: Data(feed))
        return Dictionary(entries.map { ($0.url, $0.checksum) }) { first, _ in first }
    }

    /// Every feed answer is signed for its request, freshly, within one second too (before,
    /// the answers of one second shared one signature, so one recorded answered any request of
    /// that second and any later one): two requests with two nonces get two signatures, each
    /// over its own nonce, and the origin the gallery is bound at.
    @Test func everyFeedAnswerIsSignedForItsOwnRequestEvenWithinOneSecond() async throws {
        let clock = TestWallClock()
        let configuration = GalleryConfiguration(port: 0, now: clock.now, revisionInterval: .zero)
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let url = "http://127.0.0.1:\(port)/gallery/images"
            let nonces = ["AAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBB"]
            let first = try await get(url, [("EmojiArt-Feed-Nonce", nonces[0])])
            let etag = try #require(first.headers.first(name: "etag"))
            let again = try await get(url, [("EmojiArt-Feed-Nonce", nonces[1])])
            let notModified = try await get(url, [("If-None-Match", etag), ("EmojiArt-Feed-Nonce", nonces[0])])
            let notModifiedAgain = try await get(url, [("If-None-Match", etag), ("EmojiArt-Feed-Nonce", nonces[1])])
            #expect(notModified.status == 304 && notModifiedAgain.status == 304)
            let signatures = [first, again, notModified, notModifiedAgain].compactMap { $0.headers.first(name: "signature") }
            #expect(Set(signatures).count == 4, "one signature per request")
            for (answer, nonce) in zip([first, again, notModified, notModifiedAgain], nonces + nonces) {
                #expect(answer.headers.first(name: "signature-input")?.contains(#""emojiart-feed-nonce";req"#) == true)
                #expect(answer.headers.first(name: "emojiart-feed-nonce") == nonce, "echoed")
                #expect(answer.headers.first(name: "emojiart-gallery-origin") == "http://127.0.0.1:\(port)", "the bound address")
            }
            // A new edition within the same second is signed for itself.
            #expect(try await get("http://127.0.0.1:\(port)/gallery/test/revise", method: .POST).status == 200)
            let revised = try await get(url, [("EmojiArt-Feed-Nonce", nonces[0])])
            #expect(revised.headers.first(name: "etag") != etag)
            #expect(revised.headers.first(name: "signature") != first.headers.first(name: "signature"), "signed for the new edition")
            // The next second: dated by the clock.
            clock.advance(by: 1)
            let next = try await get(url, [("EmojiArt-Feed-Nonce", nonces[0])])
            let created = Int64(clock.current.timeIntervalSince1970.rounded(.down))
            #expect(next.headers.first(name: "signature-input")?.contains(";created=\(created);") == true, "\(next.headers)")
        }
    }

    /// A nonce that is not one (too short for 128 bits, another alphabet, padding, two of them)
    /// is answered 400, saying what a nonce is; none at all gets the feed, signed unbound (no
    /// app takes it: a browser's or curl's look at the feed).
    @Test(arguments: [
        "short", "AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAA==", "AAAAAAAAAAA+AAAAAAAAAA/A", "AAAAAAAAAAAAAAAAAAAAAA, BBBBBBBBBBBBBBBBBBBBBB",
        String(repeating: "A", count: 129), "AAAAAAAAAAA AAAAAAAAAAAA",
    ])
    func aMalformedNonceIsAnswered400(nonce: String) async throws {
        let configuration = GalleryConfiguration(port: 0)
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let url = "http://127.0.0.1:\(port)/gallery/images"
            let refused = try await get(url, [("EmojiArt-Feed-Nonce", nonce)])
            #expect(refused.status == 400, "\(nonce)")
            #expect(String(decoding: refused.body, as: UTF8.self).contains("base64url"))
            #expect(refused.headers.first(name: "signature") == nil)
            let unbound = try await get(url)
            #expect(unbound.status == 200)
            #expect(unbound.headers.first(name: "signature-input")?.hasPrefix(#"feed=("@status" "etag" "content-type" "content-digest" "emojiart-gallery-origin");"#) == true)
            let bound = try await get(url, [("EmojiArt-Feed-Nonce", String(repeating: "_-", count: 11))])
            #expect(bound.status == 200)
        }
    }

    /// A gallery told its public origin (`--public-origin`) names it, not its bound address.
    @Test func aConfiguredPublicOriginIsTheOneSigned() async throws {
        var configuration = GalleryConfiguration(port: 0)
        configuration.publicOrigin = "https://gallery.example:443"
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let answer = try await get("http://127.0.0.1:\(port)/gallery/images", [("EmojiArt-Feed-Nonce", "AAAAAAAAAAAAAAAAAAAAAA")])
            #expect(answer.headers.first(name: "emojiart-gallery-origin") == "https://gallery.example:443")
        }
    }

    @Test func aRevisionGivesThreePiecesNewBytesDatedByTheGallerysClock() async throws {
        let clock = TestWallClock()
        let configuration = GalleryConfiguration(port: 0, now: clock.now, revisionInterval: .zero)
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let base = "http://127.0.0.1:\(port)"
            let published = HTTPDate.format(clock.current)
            let before = try await get(base + "/gallery/images")
            #expect(before.headers.first(name: "date") == published)
            let oldETag = try #require(before.headers.first(name: "etag"))
            let oldChecksums = try checksums(before.body)
            var oldImageTags: [Int: String] = [:]
            for piece in [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23, 24, 25, 26, 27, 28] {
                oldImageTags[piece] = try await get(base + "/gallery/image?\(piece)").headers.first(name: "etag")
            }

            clock.advance(by: 600)
            let revised = try await get(base + "/gallery/test/revise", method: .POST)
            #expect(revised.status == 200)
            struct Revision: Decodable { var revision: Int; var pieces: [Int] }
            let revision = try JSONDecoder().decode(Revision.self, from: Data(revised.body))
            #expect(revision.revision == 1)
            #expect(revision.pieces.count == 3)
            #expect(Set(revision.pieces).isDisjoint(with: [0, 10, 20]))

            let after = try await get(base + "/gallery/images", [("If-None-Match", oldETag)])
            #expect(after.status == 200, "a revised feed has a new ETag")
            #expect(after.headers.first(name: "date") == HTTPDate.format(clock.current))
            #expect(after.headers.first(name: "last-modified") == HTTPDate.format(clock.current))
            let newChecksums = try checksums(after.body)
            let changed = Set(newChecksums.keys.filter { newChecksums[$0] != oldChecksums[$0] })
            #expect(changed == Set(revision.pieces.map { "/gallery/image?\($0)" }))

            for (piece, tag) in oldImageTags {
                let answer = try await get(base + "/gallery/image?\(piece)", [("If-None-Match", tag)])
                if revision.pieces.contains(piece) {
                    #expect(answer.status == 200)
                    let hex = SHA256.hash(data: answer.body).map { String(format: "%02x", $0) }.joined()
                    #expect(newChecksums["/gallery/image?\(piece)"] == "sha256:\(hex)")
                    #expect(answer.headers.first(name: "last-modified") == HTTPDate.format(clock.current))
                } else {
                    #expect(answer.status == 304, "piece \(piece) did not change")
                    #expect(answer.body.isEmpty)
                    #expect(answer.headers.first(name: "last-modified") == published)
                }
            }
            // The next revision is new art again, even for a piece revised before.
            let second = try await get(base + "/gallery/test/revise", method: .POST)
            let secondRevision = try JSONDecoder().decode(Revision.self, from: Data(second.body))
            #expect(secondRevision.revision == 2)
            let third = try checksums(try await get(base + "/gallery/images").body)
            #expect(third != newChecksums)
        }
    }

    @Test func timedRevisionsPublishEveryIntervalOnTheGallerysClock() async throws {
        let clock = ManualClock()
        let configuration = GalleryConfiguration(port: 0, clock: clock, revisionInterval: .seconds(60))
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let feed = "http://127.0.0.1:\(port)/gallery/images"
            let first = try await get(feed).headers.first(name: "etag")
            await clock.waitForSleepers()
            clock.advance(by: .seconds(59))
            #expect(try await get(feed).headers.first(name: "etag") == first, "not yet")
            clock.advance(by: .seconds(1))
            // The timer sleeps again once the revision is published.
            await clock.waitForSleepers()
            let second = try await get(feed).headers.first(name: "etag")
            #expect(second != first)
            clock.advance(by: .seconds(60))
            await clock.waitForSleepers()
            #expect(try await get(feed).headers.first(name: "etag") != second)
        }
    }

    @Test func theReviseRouteExistsOnlyWithRevisionsOn() async throws {
        try await withLiveServer({ try await Gallery.buildApplication(.init(port: 0), onServerRunning: $0) }) { port in
            let answer = try await get("http://127.0.0.1:\(port)/gallery/test/revise", method: .POST)
            #expect(answer.status == 404)
        }
    }

    @Test func cacheControlCanBeGivenWhole() async throws {
        let configuration = GalleryConfiguration(port: 0, cacheControl: "no-store")
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let answer = try await get("http://127.0.0.1:\(port)/gallery/image?3")
            #expect(answer.headers.first(name: "cache-control") == "no-store")
        }
    }

    @Test func revisionsAreDeterministicFromTheSeed() async throws {
        let art = try await ArtStore.load()
        let one = try Publication(art: art, seed: 7, now: { Date(timeIntervalSince1970: 0) })
        let two = try Publication(art: art, seed: 7, now: { Date(timeIntervalSince1970: 0) })
        let (a, b) = (try await one.revise(), try await two.revise())
        #expect(a.revisedPieces == b.revisedPieces)
        #expect(a.feedETag == b.feedETag)
    }
}
