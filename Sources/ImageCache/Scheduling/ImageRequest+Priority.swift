extension ImageRequest {
    /// How much a request matters relative to others: queued work runs highest priority first,
    /// first in first out within one priority.
    ///
    /// Work shared by several callers (one download for many waiters) runs at the highest
    /// priority among them, and changes when a waiter's ``ImageTask/priority`` changes. Work
    /// below ``normal`` is *background* work: when a queue is full it is refused first, with
    /// ``ImagePipeline/Error/tooBusy(stage:waited:)``.
    public enum Priority: Int, Sendable, Hashable, Comparable, CaseIterable, Codable, CustomStringConvertible {
        /// Background refreshes (stale-while-revalidate).
        case veryLow = 0
        /// Prefetching.
        case low = 1
        /// The default: work a caller waits for.
        case normal = 2
        /// What a person is looking at now.
        case high = 3
        /// What must come before everything else.
        case veryHigh = 4

        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }

        /// Whether work at this priority is background work, refused first when a queue is full.
        public var isBackground: Bool { self < .normal }

        public var description: String {
            switch self {
            case .veryLow: "very low"
            case .low: "low"
            case .normal: "normal"
            case .high: "high"
            case .veryHigh: "very high"
            }
        }
    }
}
