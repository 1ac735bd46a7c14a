/// The clock a pipeline measures failure expiries and queue deadlines on, erased to what it
/// needs: the time since the pipeline was made, and a sleep. Tests pass a clock they move by
/// hand; any `Clock<Duration>` will do, so no clock library is part of the API.
struct PipelineClock: Sendable {
    private let elapsed: @Sendable () -> Duration
    /// Sleeps for a duration on the clock.
    let sleep: @Sendable (Duration) async throws -> Void

    init<C: Clock<Duration>>(_ clock: C) {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleep = { try await clock.sleep(for: $0) }
    }

    /// The time since the pipeline was made.
    var now: Duration { elapsed() }
}
