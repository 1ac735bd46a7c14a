@testable import EmojiArtApp
import FastLane
import Hummingbird
import HTTPTypes
import NIOCore
import Foundation
import ImageCache
import Synchronization
import Testing
import TestSupport

/// Issue 48, part 4: fair event streams. Before, `/events` places were counted per address only
/// (at the edge) and in total (at the app): forty loopback addresses took every stream of both
/// instances, and a browser's `/events` then got 503. Now one address holds at most
/// `maxEventStreamsPerClient` (429 past it), and when every place is taken the oldest stream of
/// the address holding the most ends for an address holding fewer: a new client always gets a
/// stream while many addresses hold theirs. A real app on 127.0.0.1:0, real connections from
/// other loopback addresses.
@Suite(.serialized, .timeLimit(.minutes(3))) struct FairEventStreamsTests {
    /// Opens an `/events` stream from each of `sources` (in order, each answered before the next
    /// is asked), and runs `body` while all are open; a stream's connection closes when its
    /// stream ends (`Connection: close`).
    static func holdingStreams<T: Sendable>(
        _ sources: [String], port: Int, held: [RawHTTPConnection] = [], _ body: ([RawHTTPConnection]) async throws -> T
    ) async throws -> T {
        guard held.count < sources.count else { return try await body(held) }
        return try await RawHTTPConnection.with(port: port, from: sources[held.count]) { connection in
            #expect(try await stream(connection, port: port) == 200, "\(sources[held.count])")
            return try await holdingStreams(sources, port: port, held: held + [connection], body)
        }
    }

    /// Asks for `/events` on `connection`: the answer's status.
    static func stream(_ connection: RawHTTPConnection, port: Int) async throws -> Int? {
        try await connection.send(["/events"], fields: ["Host: 127.0.0.1:\(port)", "Connection: close"])
        return try await connection.response()?.status
    }

    /// `/events` from `source` on a connection of its own, closed after the answer's head.
    static func ask(_ source: String, port: Int) async throws -> Int? {
        try await RawHTTPConnection.with(port: port, from: source) { try await stream($0, port: port) }
    }

    /// Forty addresses (127.0.0.2 to 127.0.0.41) hold every place of an app serving 40 streams:
    /// one of them asking for another gets 503 (it holds as many as the most), and a browser at
    /// a new address gets its stream; the oldest stream of the most holding ends for it.
    @Test func aNewAddressGetsAStreamWhileManyAddressesHoldEveryPlace() async throws {
        try await withVerifiedApp(configure: { $0.maxEventStreams = 40; $0.eventStreamHeartbeat = .seconds(3600) }) { port, _, services in
            let slots = services.eventStreams
            let sources = (2...41).map { "127.0.0.\($0)" }
            try await Self.holdingStreams(sources, port: port) { held in
                #expect(slots.open.value == 40)
                #expect(try await Self.ask("127.0.0.3", port: port) == 503, "no more than its share")
                #expect(slots.evicted.load(ordering: .relaxed) == 0)

                #expect(try await Self.ask("127.0.0.1", port: port) == 200, "a new address gets a stream")
                try #require(slots.evicted.load(ordering: .relaxed) == 1)
                // The oldest stream (127.0.0.2's, the first opened) ended: its connection closes.
                let ended = String(decoding: try await held[0].closed(), as: UTF8.self)
                #expect(ended.hasSuffix("0\r\n\r\n"), "the stream's last chunk: \(ended.suffix(40))")
                #expect(slots.open.value == 40)
            }
        }
    }

    /// One address holds at most its share: past it, 429, while another address gets its own.
    @Test func oneAddressHoldsAtMostItsShare() async throws {
        try await withVerifiedApp(configure: { $0.maxEventStreamsPerClient = 2; $0.eventStreamHeartbeat = .seconds(3600) }) { port, _, services in
            try await Self.holdingStreams(["127.0.0.2", "127.0.0.2"], port: port) { (_) async throws in
                #expect(try await Self.ask("127.0.0.2", port: port) == 429)
                #expect(services.eventStreams.open.value == 2, "a refused request takes no place")
                #expect(try await Self.ask("127.0.0.3", port: port) == 200)
            }
        }
    }

    /// The slots' bookkeeping, case by case: the most holding loses its oldest, ties go to the
    /// oldest stream, an address holding as many as the most is refused, and a place evicted is
    /// not given back twice.
    @Test func theSlotsGiveWayToTheClientHoldingFewest() throws {
        let slots = EventStreamSlots(limit: 3, perClient: 3)
        var a1: EventStreamSlots.Slot? = try slots.take(for: "a").get()
        var a2: EventStreamSlots.Slot? = try slots.take(for: "a").get()
        var b1: EventStreamSlots.Slot? = try slots.take(for: "b").get()
        let ended = Mutex<[String]>([])
        a1?.onEviction { ended.withLock { $0.append("a1") } }
        a2?.onEviction { ended.withLock { $0.append("a2") } }
        b1?.onEviction { ended.withLock { $0.append("b1") } }
        #expect(slots.take(for: "a").failure == .full, "a holds the most")
        let c1 = try slots.take(for: "c").get()
        #expect(ended.withLock { $0 } == ["a1"], "the oldest of the most holding ended")
        #expect(slots.open.value == 3)
        // a, b and c hold one each: a new client takes the oldest stream's place (a2's).
        let d1 = try slots.take(for: "d").get()
        #expect(ended.withLock { $0 } == ["a1", "a2"])
        #expect(slots.open.value == 3 && slots.evicted.load(ordering: .relaxed) == 2)
        (a1, a2) = (nil, nil)
        #expect(slots.open.value == 3, "an evicted place is not given back twice")
        b1 = nil
        #expect(slots.open.value == 2, "a place ended otherwise is")
        // A stream set up after its eviction ends at once.
        let e1 = try slots.take(for: "e").get(), f1 = try slots.take(for: "f").get()
        c1.onEviction { ended.withLock { $0.append("c1") } }
        #expect(ended.withLock { $0 } == ["a1", "a2", "c1"], "c's place went to f")
        withExtendedLifetime((d1, e1, f1)) {}
    }
}

extension Result {
    /// The error, if it failed.
    var failure: Failure? {
        if case let .failure(error) = self { error } else { nil }
    }
}

extension FairEventStreamsTests {
    /// Behind the edge every client arrives from the edge's address: the edge names each one in
    /// `EmojiArt-Client-Address` (real nginx: a client's own field of that name is replaced), and
    /// an app run `--behind-edge` counts by it, from a loopback peer only.
    @Test func behindTheEdgeEachClientIsCountedByItsOwnAddress() async throws {
        try await EdgeRouteTests.withEdge(workers: 1, workerConnections: 1024) { (edgePort) async throws in
            for source in ["127.0.0.2", "127.0.0.3"] {
                let answer = try await RawHTTPConnection.with(port: edgePort, from: source) { connection in
                    try await connection.send(["/events"], fields: ["Host: localhost", "EmojiArt-Client-Address: 198.51.100.9"])
                    return try await connection.response()
                }
                #expect(answer?.status == 200 && answer.map { String(decoding: $0.body, as: UTF8.self) } == source, "\(String(describing: answer))")
            }
        }
        let directory = TemporaryDirectory()
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
        let galleryURL = URL(string: "http://127.0.0.1:9")!
        func services(behindEdge: Bool) throws -> AppServices {
            var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
            configuration.clientAddressFromEdge = behindEdge
            return try EmojiArtApp.buildRouterAndServices(configuration, model: makeModel(galleryURL, pipeline), pipeline: pipeline).services
        }
        let request = Request(
            head: .init(method: .get, scheme: nil, authority: "127.0.0.1", path: "/events", headerFields: [AppServices.clientAddressField: "198.51.100.9"]),
            body: .init(buffer: ByteBuffer())
        )
        let (edge, alone) = (try services(behindEdge: true), try services(behindEdge: false))
        try FastLaneHTTP1Channel.$clientAddress.withValue(try SocketAddress(ipAddress: "127.0.0.1", port: 40_000)) {
            #expect(edge.clientKey(request) == "198.51.100.9", "named by the edge on this machine")
            #expect(alone.clientKey(request) == "127.0.0.1", "without --behind-edge the field is nobody's word")
        }
        try FastLaneHTTP1Channel.$clientAddress.withValue(try SocketAddress(ipAddress: "192.0.2.1", port: 40_000)) {
            #expect(edge.clientKey(request) == "192.0.2.1", "a peer elsewhere cannot name another client")
        }
    }
}
