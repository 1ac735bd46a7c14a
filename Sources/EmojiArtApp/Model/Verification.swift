import ImageCache

/// How verifying one feed entry ended.
public enum VerificationStatus: Sendable, Hashable {
    /// Not verified yet.
    case pending
    /// The downloaded bytes hash to the feed's checksum.
    case verified
    /// The bytes hash to something else.
    case mismatch(expected: String, actual: String)
    /// The gallery answered 404 (pieces 0, 10 and 20 always do).
    case missing
    /// Offline, and the cache does not hold the image.
    case notCached
    /// Any other failure: server error, timeout, broken connection.
    case failed(String)

    /// Whether the image could not be had at all (missing or failed), so there is nothing to show.
    public var isUnavailable: Bool {
        switch self {
        case .missing, .failed, .notCached: true
        case .pending, .verified, .mismatch: false
        }
    }

    /// Whether the image arrived but its bytes do not match the signed feed.
    public var failedVerification: Bool {
        if case .mismatch = self { true } else { false }
    }

    /// A short label: "verified", "mismatch", "missing", "not cached", "failed", "pending".
    public var label: String {
        switch self {
        case .pending: "pending"
        case .verified: "verified"
        case .mismatch: "mismatch"
        case .missing: "missing"
        case .notCached: "not cached"
        case .failed: "failed"
        }
    }

    /// A sentence for people.
    public var explanation: String {
        switch self {
        case .pending: "Not verified yet."
        case .verified: "The image matches the gallery's checksum."
        case let .mismatch(expected, actual):
            "The image does not match the gallery's checksum (expected \(expected.prefix(12))…, got \(actual.prefix(12))…)."
        case .missing: "The gallery does not have this image (404)."
        case .notCached: "Offline, and the cache does not hold this image: load it once online."
        case let .failed(reason): "The image could not be loaded: \(reason)"
        }
    }

    /// Classifies a load error.
    init(_ error: any Error) {
        switch error {
        case ImagePipeline.Error.httpStatus(404, _), ImagePipeline.Error.httpStatus(410, _):
            self = .missing
        case let ImagePipeline.Error.checksumMismatch(expected, actual, _):
            self = .mismatch(expected: expected, actual: actual)
        case ImagePipeline.Error.notCached:
            self = .notCached
        default:
            self = .failed("\(error)")
        }
    }
}

/// Where verification stands: published live while it runs.
public struct VerificationProgress: Sendable, Hashable, Codable {
    /// Entries in the feed.
    public var total: Int
    /// Entries finished, whatever their outcome.
    public var completed: Int
    /// Entries whose checksum matched.
    public var verified: Int
    /// Entries whose checksum did not match.
    public var mismatched: Int
    /// Entries the gallery does not have (404).
    public var missing: Int
    /// Entries that failed otherwise.
    public var failed: Int
    /// Entries the cache could not answer offline.
    public var notCached: Int

    /// Creates progress for `total` entries, none finished.
    public init(total: Int) {
        self.total = total
        completed = 0
        verified = 0
        mismatched = 0
        missing = 0
        failed = 0
        notCached = 0
    }

    /// Finished share, 0...1.
    public var fraction: Double { total == 0 ? 1 : Double(completed) / Double(total) }

    /// Whether every entry has finished.
    public var isComplete: Bool { completed == total }

    /// Counts one finished entry.
    mutating func record(_ status: VerificationStatus) {
        count(status, by: 1)
    }

    /// Counts an entry verified again: no longer as `before` (uncounted if it was pending), now
    /// as `after`.
    mutating func replace(_ before: VerificationStatus, with after: VerificationStatus) {
        if before != .pending { count(before, by: -1) }
        count(after, by: 1)
    }

    private mutating func count(_ status: VerificationStatus, by delta: Int) {
        guard status != .pending else { return }
        completed += delta
        switch status {
        case .verified: verified += delta
        case .mismatch: mismatched += delta
        case .missing: missing += delta
        case .failed: failed += delta
        case .notCached: notCached += delta
        case .pending: break
        }
    }
}
