import ImageCache
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
}
