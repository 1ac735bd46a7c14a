import Clocks
import ImageCache
import ServiceLifecycle
import Synchronization

/// The `stats` events of every open `/events` stream, made once for all of them and at most
/// once per ``interval``.
///
/// A memory hit, disk hit or origin fetch, or a change of the background encoder's count, wakes
/// this one follower (not one per open page: a hit answered on the event loop yields to one
/// stream whatever the number of pages); it encodes the counts (``AppStats``) once and publishes
/// them in ``latest``, which each stream follows. Changes that come within ``interval`` of the
/// last publication wait for its end and go out as one, with the counts of that moment: under
/// thousands of hits a second, each page gets ten events a second, and the last counts always
/// arrive.
///
/// Every publication carries a sequence number taken before its counts were read. A stream
/// starts with counts read after it opened (``current()``) and then sends only publications read
/// after those (a higher number), so its counts never go back, and a client that opens
/// `/events` after being answered with a stand-in never sees the `backgroundEncodes` of before
/// its variant was listed. As a `Service` of the app, it stops at graceful shutdown. Thread-safe.
final class StatsBroadcast: Service, Sendable {
    /// One publication: the `stats` event and when its counts were read.
    struct Published: Sendable {
        /// Taken before the counts were read: a higher one read them later.
        let sequence: Int
        /// The whole SSE message.
        let event: String
    }

    /// The least time between two publications.
    let interval: Duration
    /// The newest publication, for the streams to follow.
    let latest: LiveValue<Published>

    private let database: ImageDatabase
    private let backgroundEncoder: BackgroundEncoder
    private let clock: AnyClock<Duration>
    private let sequence = Atomic<Int>(0)

    /// A broadcast of the counts of `database` and `backgroundEncoder`, on `clock` (tests pass one
    /// they move by hand).
    init(
        database: ImageDatabase, backgroundEncoder: BackgroundEncoder, interval: Duration = .milliseconds(100),
        clock: some Clock<Duration> = ContinuousClock()
    ) {
        self.database = database
        self.backgroundEncoder = backgroundEncoder
        self.interval = interval
        self.clock = (clock as? AnyClock<Duration>) ?? AnyClock(clock)
        latest = LiveValue(Published(sequence: 0, event: ""))
    }

    /// The counts now, with a new sequence number.
    func current() -> Published {
        let sequence = sequence.add(1, ordering: .sequentiallyConsistent).newValue
        return Published(sequence: sequence, event: ServerSentEvent.message("stats", AppStats(database: database.stats(), backgroundEncodes: backgroundEncoder.count)))
    }

    /// Follows the counters until the app shuts down, publishing their changes.
    func run() async throws {
        let (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let sources = [database.onMemoryAccess, database.onDiskAccess, database.onOriginFetch, backgroundEncoder.changes.stream()]
        await withTaskGroup(of: Void.self) { group in
            for source in sources {
                group.addTask {
                    for await _ in source { changed.yield() }
                }
            }
            await cancelWhenGracefulShutdown { [self] in
                for await _ in changes {
                    let published = current()
                    latest.update { $0 = published }
                    // At most one publication an interval: changes meanwhile wait as one.
                    do { try await clock.sleep(for: interval) } catch { return }
                }
            }
            group.cancelAll()
        }
    }
}
