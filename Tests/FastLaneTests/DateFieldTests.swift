@testable import FastLane
import Foundation
import HTTPCaching
import Synchronization
import Testing

/// The lane's `Date` field: the clock's second as an IMF-fixdate, made once per second and read
/// by every event loop at once.
@Suite struct DateFieldTests {
    /// A clock the test sets.
    final class SetClock: Sendable {
        let seconds: Mutex<TimeInterval>

        init(_ seconds: TimeInterval) {
            self.seconds = Mutex(seconds)
        }

        func set(_ seconds: TimeInterval) {
            self.seconds.withLock { $0 = seconds }
        }

        @Sendable func now() -> Date {
            Date(timeIntervalSince1970: seconds.withLock { $0 })
        }
    }

    /// RFC 9110's example date, 1994-11-06T08:49:37Z.
    static let example: TimeInterval = 784_111_777

    @Test func theFieldFollowsTheClocksSecond() {
        let clock = SetClock(Self.example)
        let field = DateField(now: clock.now)
        #expect(field.value == "Sun, 06 Nov 1994 08:49:37 GMT")
        clock.set(Self.example + 0.999)
        #expect(field.value == "Sun, 06 Nov 1994 08:49:37 GMT", "the same second")
        clock.set(Self.example + 1)
        #expect(field.value == "Sun, 06 Nov 1994 08:49:38 GMT")
        clock.set(Self.example - 60)
        #expect(field.value == "Sun, 06 Nov 1994 08:48:37 GMT", "a clock set back")
        clock.set(-0.5)
        #expect(field.value == "Wed, 31 Dec 1969 23:59:59 GMT", "before 1970: the second it falls in")
    }

    /// A clock past Int's range, or not a number, is formatted as HTTPDate clamps it, never trapping.
    @Test(arguments: [TimeInterval.infinity, 1e300, .nan])
    func aClockOutOfRangeIsFormattedEveryTime(seconds: TimeInterval) {
        let field = DateField(now: { Date(timeIntervalSince1970: seconds) })
        #expect(field.value == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(field.value == "Fri, 31 Dec 9999 23:59:59 GMT")
    }

    /// Readers on several threads while the clock moves on: each reads the whole value of a
    /// second the clock showed.
    @Test func readersOnManyThreadsSeeWholeValues() async {
        let clock = SetClock(Self.example)
        let field = DateField(now: clock.now)
        let valid = Set((0...50).map { HTTPDate.format(Date(timeIntervalSince1970: Self.example + TimeInterval($0))) })
        let wrong = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    (0..<20_000).count { _ in !valid.contains(field.value) }
                }
            }
            group.addTask {
                for second in 0...50 { clock.set(Self.example + TimeInterval(second)) }
                return 0
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
        #expect(field.value == "Sun, 06 Nov 1994 08:50:27 GMT", "the clock's last second")
    }
}

