@testable import ImageCache
import Testing

@Suite(.timeLimit(.minutes(3))) struct LiveValueTests {
    @Test func aListenerSeesTheCurrentValueThenEveryChangeInOrder() async {
        let value = LiveValue(0)
        let listener = Task {
            var seen: [Int] = []
            for await current in value.stream() {
                seen.append(current)
                if current == 100 { break }
            }
            return seen
        }
        for _ in 0..<100 { value.update { $0 += 1 } }
        let seen = await listener.value
        #expect(seen.last == 100 && seen == seen.sorted())
    }

    /// Updates while listeners are cancelled: a delivery used to wait for a cancelling task's lock
    /// while that task waited for the value's lock to forget its listener, and both hung (seen as
    /// an app that neither answered nor stopped). Bounded: it ends, or the time limit fails it.
    @Test func updatesWhileListenersAreCancelledNeverDeadlock() async {
        let value = LiveValue(0)
        for _ in 0..<50 {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask { for await _ in value.stream() {} }
                }
                group.addTask { for _ in 0..<200 { value.update { $0 += 1 } } }
                group.addTask { await Task.yield() }
                await group.next()
                group.cancelAll()
            }
        }
        #expect(value.value == 50 * 200)
    }

    /// A counter that nobody follows costs an atomic add; a stream that starts while other tasks
    /// count must still see every increment: its values rise, and the last one it is given, once
    /// the counting is over, is the counter's value.
    @Test func aCounterFollowedWhileItCountsMissesNoIncrement() async {
        for _ in 0..<20 {
            let counter = LiveCounter()
            let (last, streams) = await withTaskGroup(of: Void.self, returning: (Int, AsyncStream<Int>).self) { group in
                for _ in 0..<4 {
                    group.addTask { for _ in 0..<500 { counter.increment() } }
                }
                let stream = counter.stream()  // while they count
                await group.waitForAll()
                return (counter.value, stream)
            }
            #expect(last == 2000)
            var seen: [Int] = []
            for await value in streams {
                seen.append(value)
                if value == last { break }
            }
            #expect(seen == seen.sorted() && seen.last == 2000, "\(seen.suffix(3))")
        }
    }
}
