public import Logging
import Synchronization

/// A swift-log handler that keeps every message it is given, for tests that assert what an
/// operator is told: `Logger(label: "test", factory: recorder.handler)`.
public final class LogRecorder: Sendable {
    /// One message as it was logged.
    public struct Entry: Sendable, Equatable {
        public let level: Logger.Level
        public let message: String
        public let metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    /// Every message logged so far, in order.
    public var logged: [Entry] { entries.withLock { $0 } }

    /// A logger whose messages (at `.trace` and above) this recorder keeps.
    public func logger(label: String = "test") -> Logger {
        Logger(label: label) { _ in Handler(recorder: self) }
    }

    fileprivate func keep(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            recorder.keep(Entry(level: event.level, message: "\(event.message)", metadata: all.mapValues { "\($0)" }))
        }
    }
}
