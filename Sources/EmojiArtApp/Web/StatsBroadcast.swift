import Clocks
import ImageCache
import ServiceLifecycle
import Synchronization

/// The `stats` events of every open `/events` stream, made once for all of them, at most once
/// per ``interval``, and only while a stream is open.
///
/// While at least one stream is open it reads the counts (``AppStats``) every ``interval`` and,
/// when they changed, encodes them once and publishes them in ``latest``, which each stream
/// follows. It follows no counter: a memory hit stays one atomic add (the hit counters cost a
/// lock only while something follows them), however many pages are open, and with none open it
/// does nothing at all. Under thousands of hits a second each page gets ten events a second, and
/// the last counts always arrive.
///
/// Every publication carries a sequence number, given in the same step as its counts are read.
/// A stream starts with counts read after it opened (``current()``) and then sends only
/// publications read after those (a higher number), so its counts never go back, and a client
/// that opens `/events` after being answered with a stand-in never sees the `backgroundEncodes`
/// of before its variant was listed. As a `Service` of the app, it stops at graceful shutdown.
/// Thread-safe.
final class StatsBroadcast: Service, Sendable {
    /// One publication: the `stats` event and when its counts were read.
    struct Published: Sendable, Equatable {
        /// Given in the same step as the counts were read: a higher one read them later.
        let sequence: Int
        /// The whole SSE message.
        let event: String
    }

    /// How often the counts are read while a stream is open.
    let interval: Duration
    /// The newest publication, for the streams to follow.
    let latest: LiveValue<Published>

    /// The counts to publish, read on the actor the counts live on.
    private let read: @ImageDatabase @Sendable () -> AppStats
    private let clock: AnyClock<Duration>
    /// The last sequence number given; taken with the read of the counts.
    private let reads = Mutex(0)
    /// The streams open now.
    private let openStreams = Atomic<Int>(0)
    /// Wakes the follower when a stream opens.
    private let opened: AsyncStream<Void>.Continuation
    private let openings: AsyncStream<Void>

    /// A broadcast of the counts `read` gives (``AppServices/stats()``), on `clock` (tests
    /// pass one they move by hand).
    init(
        interval: Duration = .milliseconds(100), clock: some Clock<Duration> = ContinuousClock(),
        read: @escaping @ImageDatabase @Sendable () -> AppStats
    ) {
        self.read = read
        self.interval = interval
        self.clock = (clock as? AnyClock<Duration>) ?? AnyClock(clock)
        latest = LiveValue(Published(sequence: 0, event: ""))
        (openings, opened) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The counts now, with a new sequence number given in the same step.
    func current() async -> Published {
        let (sequence, stats) = await snapshot()
        // Encoded off the actor: its executor is the pipeline's, for bookkeeping only.
        return Published(sequence: sequence, event: ServerSentEvent.message("stats", stats))
    }

    /// The counts and their sequence number, read in one turn on the actor the counts live on:
    /// a later number never goes with earlier counts.
    @ImageDatabase private func snapshot() -> (Int, AppStats) {
        reads.withLock { last in
            last += 1
            return (last, read())
        }
    }

    /// Follows ``latest`` for one `/events` stream: its own counts read now, then every
    /// publication read after them that says something new. The broadcast reads the counts
    /// while such a stream is open.
    func events() async -> AsyncStream<String> {
        let published = latest.stream()
        let first = await current()
        openStreams.add(1, ordering: .sequentiallyConsistent)
        opened.yield()
        return AsyncStream { continuation in
            let task = Task {
                var sent = first.event
                continuation.yield(sent)
                for await next in published where next.sequence > first.sequence && next.event != sent {
                    sent = next.event
                    continuation.yield(sent)
                }
                continuation.finish()
            }
            continuation.onTermination = { [self] _ in
                task.cancel()
                openStreams.subtract(1, ordering: .sequentiallyConsistent)
            }
        }
    }

    /// Reads and publishes the counts every ``interval`` while a stream is open, until the app
    /// shuts down.
    func run() async throws {
        await cancelWhenGracefulShutdown { [self] in
            var last = ""
            for await _ in openings {
                while openStreams.load(ordering: .sequentiallyConsistent) > 0 {
                    let published = await current()
                    if published.event != last {
                        last = published.event
                        latest.update { $0 = published }
                    }
                    do { try await clock.sleep(for: interval) } catch { return }
                }
            }
        }
    }
}
