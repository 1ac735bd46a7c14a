@testable import EmojiArtApp
import Foundation
import ImageCache
import Testing
import TestSupport

/// The `stats` events are made once for every open stream, at most once per interval, and the
/// last counts always go out (a real database, the broadcaster's clock moved by hand).
@Suite(.timeLimit(.minutes(1))) struct StatsBroadcastTests {
    @Test func hitsWithinAnIntervalGoOutAsOnePublicationWithTheLastCounts() async throws {
        let directory = TemporaryDirectory()
        let database = ImageDatabase(configuration: .init(directory: directory.url, synchronizesWrites: false))
        let encoder = BackgroundEncoder(database: database)
        let clock = ManualClock()
        let broadcast = StatsBroadcast(database: database, backgroundEncoder: encoder, interval: .milliseconds(100), clock: clock)
        var published = broadcast.latest.stream().makeAsyncIterator()
        #expect(await published.next()?.sequence == 0, "nothing published before it runs")
        let running = Task { try await broadcast.run() }
        defer { running.cancel() }

        // It starts with the counts of that moment, then waits out the interval.
        let first = try #require(await published.next())
        #expect(first.sequence > 0 && first.event.contains("\"memoryHits\":0"))
        await clock.waitForSleepers(1)

        let request = ImageRequest(url: URL(string: "http://127.0.0.1:1/a")!)
        database.imageLoader.add(Image(data: [1, 2, 3], contentType: "image/png"), forKey: request.cacheKey)
        for _ in 0..<3 { #expect(database.memoryImage(for: request) != nil) }
        #expect(broadcast.latest.value.sequence == first.sequence, "nothing goes out within the interval")

        clock.advance(by: .milliseconds(100))
        let second = try #require(await published.next())
        #expect(second.event.contains("\"memoryHits\":3"), "one publication, the last counts: \(second.event)")
        await clock.waitForSleepers(1)
        #expect(broadcast.latest.value.sequence == second.sequence, "and only one")

        // A stream's own first counts are read after it opened: newer than any publication.
        #expect(broadcast.current().sequence > second.sequence)
    }
}
