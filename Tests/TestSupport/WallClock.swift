public import Foundation
import Synchronization

/// A wall clock a test sets and moves: pass ``now`` wherever code asks for the date (the
/// gallery's `Date` and `Last-Modified`, the cache's freshness), then ``advance(by:)`` it to make
/// hours pass at once. Thread-safe.
public final class TestWallClock: Sendable {
    private let date: Mutex<Date>

    /// A clock showing `start`: by default a fixed, whole second in 2023.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        date = Mutex(start)
    }

    /// The date it shows.
    public var current: Date { date.withLock { $0 } }

    /// The date it shows, as a closure to inject.
    public var now: @Sendable () -> Date { { self.current } }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) {
        date.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
