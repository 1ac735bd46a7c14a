import FastLane
import Foundation
@testable import GalleryServer
import HTTPCaching
import Hummingbird
import Logging
import Testing
import TestSupport

/// The gallery's image route with the fast lane and without: twin servers on one publication
/// and one set of metrics, asked the same things over raw connections.
@Suite(.timeLimit(.minutes(3))) struct GalleryFastLaneTests {
    func withTwins(_ body: (_ lanePort: Int, _ plainPort: Int, _ lane: FastLane, _ metrics: GalleryMetrics) async throws -> Void) async throws {
        let configuration = GalleryConfiguration(port: 0)
        let art = try await ArtStore.load(configuration.catalog)
        let publication = try Publication(art: art, seed: configuration.seed, now: configuration.now)
        let metrics = GalleryMetrics(catalog: configuration.catalog)
        let (router, gallery) = try Gallery.buildRouterAndController(configuration, publication: publication, metrics: metrics)
        let responder = router.buildResponder()
        let lane = FastLane(serverName: "EmojiArt-Gallery", now: configuration.now, respond: gallery.fastLane)
        func server(_ lane: FastLane?, _ running: @escaping @Sendable (Int) async -> Void) -> GalleryApplication {
            GalleryApplication(
                responder: responder, server: .http1(fastLane: lane),
                configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "EmojiArt-Gallery"),
                logger: .init(label: "gallery"), now: configuration.now, running: running, revisions: nil
            )
        }
        try await withLiveServer({ server(lane, $0) }) { lanePort in
            try await withLiveServer({ server(nil, $0) }) { plainPort in
                try await body(lanePort, plainPort, lane, metrics)
            }
        }
    }

    func ask(_ port: Int, _ path: String, method: String = "GET", fields: [String] = []) async throws -> RawHTTPResponse {
        try await RawHTTPConnection.with(port: port) { connection in
            try await connection.send([path], method: method, fields: fields)
            return try #require(try await connection.response(head: method == "HEAD"))
        }
    }

    /// The counters of the Prometheus text, by line name and labels.
    func counters(_ metrics: GalleryMetrics) -> [String: Double] {
        var values: [String: Double] = [:]
        for line in String(buffer: metrics.exposition()).split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            values[String(line[..<space])] = value
        }
        return values
    }

    func changes(from before: [String: Double], to after: [String: Double]) -> [String: Double] {
        after.filter { before[$0.key] != $0.value }.reduce(into: [:]) { $0[$1.key] = $1.value - (before[$1.key] ?? 0) }
    }

    @Test func everyAnswerAndEveryCountIsTheRoutes() async throws {
        try await withTwins { lanePort, plainPort, lane, metrics in
            let first = try await ask(plainPort, "/gallery/image?5")
            let etag = try #require(first["etag"])
            let lastModified = try #require(first["last-modified"])
            let cases: [(String, String, [String], Bool)] = [
                ("/gallery/image?5", "GET", [], true),
                ("/gallery/image?5", "HEAD", [], true),
                ("/gallery/image?5", "GET", ["If-None-Match: \(etag)"], true),
                ("/gallery/image?5", "GET", [#"If-None-Match: "other""#], true),
                ("/gallery/image?5", "GET", ["If-Modified-Since: \(lastModified)"], true),
                ("/gallery/image?28", "GET", [], true),
                ("/gallery/image?05", "GET", [], true),  // the route reads it as 5 too
                ("/gallery/image?10", "GET", [], false),  // missing: 404
                ("/gallery/image?10", "HEAD", [], false),  // its head, passed on: no body
                ("/gallery/image?29", "GET", [], false),  // no such piece: 404
                ("/gallery/image?x", "GET", [], false),  // 400
                ("/gallery/image", "GET", [], false),  // 400
                ("/gallery/image?+5", "GET", [], false),
                // One spelling per route (issue 40): any other is a path no route has, 404.
                ("/gallery/image/?5", "GET", [], false),
                ("//gallery/image?5", "GET", [], false),
                ("/gallery//image?5", "GET", [], false),
                ("/gallery/./image?5", "GET", [], false),
                ("/gallery/x/../image?5", "HEAD", [], false),
                ("/gallery/imag%65?5", "GET", [], false),
            ]
            let unknown = try await ask(plainPort, "/gallery/no-such-route")
            for (path, method, fields, byLane) in cases {
                let answered = lane.answered
                let before = counters(metrics)
                let viaLane = try await ask(lanePort, path, method: method, fields: fields)
                let laneCounts = changes(from: before, to: counters(metrics))
                #expect(lane.answered - answered == (byLane ? 1 : 0), "\(method) \(path) \(fields)")
                let middle = counters(metrics)
                let viaRouter = try await ask(plainPort, path, method: method, fields: fields)
                let routerCounts = changes(from: middle, to: counters(metrics))
                #expect(viaLane.without(["date"]) == viaRouter.without(["date"]), "\(method) \(path) \(fields)")
                // Images, 304s and errors alike: the content type is never to be guessed.
                #expect(viaLane["x-content-type-options"] == "nosniff" && viaRouter["x-content-type-options"] == "nosniff", "\(method) \(path)")
                #expect(laneCounts == routerCounts, "\(method) \(path) \(fields)")
                #expect(!laneCounts.isEmpty, "every image request is counted: \(path)")
                if !FastLane.hasOneSpelling(path) {
                    #expect(viaRouter.status == 404 && viaRouter.body == (method == "GET" ? unknown.body : []), "\(method) \(path)")
                }
            }
        }
    }

    @Test func faultsTurnTheLaneOff() async throws {
        // Every request fails by injection: one the lane answered would not.
        let configuration = GalleryConfiguration(port: 0, faults: .init(failureRate: 1))
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let answer = try await ask(port, "/gallery/image?5")
            #expect(answer.status == 500)
        }
    }

    @Test func theGateTurnsTheLaneOff() async throws {
        // With a gate, every image request must reach the route (which holds it): a request the
        // lane answered would pass the gate.
        let gate = ImageGate()
        let configuration = GalleryConfiguration(port: 0, imageGate: gate)
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send(["/gallery/image?5"])
                try await gate.waitUntilHolding(1)
                gate.release(1)
                #expect(try await connection.response()?.status == 200)
                #expect(gate.status.passed == 1)
            }
        }
    }
}
