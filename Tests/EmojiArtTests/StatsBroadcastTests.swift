@testable import EmojiArtApp
import Foundation
import ImageCache
import Testing
import TestSupport

/// The `stats` events are read once for every open stream, at most once per interval, only
/// while a stream is open, and the last counts always go out (a real pipeline, the broadcast's
/// clock moved by hand).
@Suite(.timeLimit(.minutes(3))) struct StatsBroadcastTests {
    @Test func hitsWithinAnIntervalGoOutAsOneEventWithTheLastCountsOnlyWhileAStreamIsOpen() async throws {
        let directory = TemporaryDirectory()
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
        _ = try await pipeline.setUp().get()
        let encoder = ImagePrefetcher(pipeline: pipeline, destination: .memoryCache, priority: .veryLow)
        let clock = ManualClock()
        let warmUp = WarmUp.initial(budget: 0)
        let broadcast = StatsBroadcast(interval: .milliseconds(100), clock: clock) {
            AppStats.now(pipeline: pipeline, encoder: encoder, warmer: encoder, warmUp: warmUp)
        }
        let running = Task { try await broadcast.run() }
        defer { running.cancel() }
        let request = ImageRequest(url: URL(string: "http://127.0.0.1:1/a")!)
        await pipeline.add(Image(data: [1, 2, 3], contentType: "image/png"), forKey: request.cacheKey)

        // No stream open: nothing is read, and a hit follows no counter.
        #expect(pipeline.answerFromMemory(request) != nil)
        #expect(broadcast.latest.value.sequence == 0 && clock.sleeperCount == 0)

        // A stream starts with the counts of its opening; then the broadcast reads every interval.
        var events = await broadcast.events().makeAsyncIterator()
        #expect(try #require(await events.next()).contains("\"memoryHits\":1"))
        await clock.waitForSleepers(1)
        for _ in 0..<3 { #expect(pipeline.answerFromMemory(request) != nil) }
        let before = broadcast.latest.value.sequence
        clock.advance(by: .milliseconds(100))
        let next = try #require(await events.next())
        #expect(next.contains("\"memoryHits\":4"), "one event, the last counts: \(next)")
        #expect(broadcast.latest.value.sequence > before)
        await clock.waitForSleepers(1)
        let published = broadcast.latest.value.sequence

        // Nothing changed: nothing more is published.
        clock.advance(by: .milliseconds(100))
        await clock.waitForSleepers(1)
        #expect(broadcast.latest.value.sequence == published, "the same counts are not sent again")

        // A new stream's own counts are read after every publication before it.
        #expect(await broadcast.current().sequence > published)
    }
}
