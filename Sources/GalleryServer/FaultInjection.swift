import Synchronization

/// Faults the gallery injects into image requests, for tests and demos. Off by default;
/// seeded, so a run with the same seed and request order fails the same way.
public struct FaultInjection: Sendable, Hashable {
    /// Delay before answering each image request.
    public var latency: Duration
    /// Probability (0...1) that an image request is answered 500.
    public var failureRate: Double
    /// Probability (0...1) that an image body is cut short after headers promised all of it.
    public var truncateRate: Double
    /// Probability (0...1) that an image is served whole but with altered bytes, so it no longer
    /// matches the feed's checksum.
    public var corruptRate: Double
    /// Seed of the fault generator.
    public var seed: UInt64

    /// Creates a fault configuration; the default injects nothing.
    public init(latency: Duration = .zero, failureRate: Double = 0, truncateRate: Double = 0, corruptRate: Double = 0, seed: UInt64 = 1) {
        self.latency = latency
        self.failureRate = failureRate
        self.truncateRate = truncateRate
        self.corruptRate = corruptRate
        self.seed = seed
    }

    /// No faults.
    public static let none = FaultInjection()

    /// Whether any fault is switched on.
    public var isActive: Bool { latency > .zero || failureRate > 0 || truncateRate > 0 || corruptRate > 0 }
}

/// What to do to one image request.
enum Fault: Equatable {
    case none, fail, truncate, corrupt
}

/// Draws faults from a seeded generator behind a mutex. Thread-safe.
final class FaultInjector: Sendable {
    let configuration: FaultInjection
    private let random: Mutex<SeededRandom>

    init(_ configuration: FaultInjection) {
        self.configuration = configuration
        random = Mutex(SeededRandom(seed: configuration.seed))
    }

    /// Draws the fault for the next image request.
    func next() -> Fault {
        let (fail, truncate, corrupt) = (configuration.failureRate, configuration.truncateRate, configuration.corruptRate)
        guard fail + truncate + corrupt > 0 else { return .none }
        let draw = random.withLock { Double.random(in: 0..<1, using: &$0) }
        if draw < fail { return .fail }
        if draw < fail + truncate { return .truncate }
        if draw < fail + truncate + corrupt { return .corrupt }
        return .none
    }
}
