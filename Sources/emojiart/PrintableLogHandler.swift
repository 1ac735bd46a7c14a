import EmojiArtApp
import Logging

/// swift-log's stream handler (standard error) behind one that shows control characters instead
/// of obeying them (``TerminalText/printable(_:keepingNewlines:)``): log lines carry words from
/// outside (a feed entry's URL or checksum, a server's reason, a request's path), and the
/// terminal of whoever runs `emojiart` must not take them as commands.
struct PrintableLogHandler: LogHandler {
    private var stream: StreamLogHandler

    init(label: String) {
        stream = StreamLogHandler.standardError(label: label)
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { stream.metadata }
        set { stream.metadata = newValue.mapValues(Self.printable) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { stream[metadataKey: key] }
        set { stream[metadataKey: key] = newValue.map(Self.printable) }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(TerminalText.printable("\(event.message)", keepingNewlines: true))"
        event.metadata = event.metadata?.mapValues(Self.printable)
        stream.log(event: event)
    }

    /// A metadata value with its text made printable.
    static func printable(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case let .string(text): .string(TerminalText.printable(text))
        case let .stringConvertible(convertible): .string(TerminalText.printable(convertible.description))
        case let .array(values): .array(values.map(printable))
        case let .dictionary(values): .dictionary(values.mapValues(printable))
        }
    }
}
