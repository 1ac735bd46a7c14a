public import Foundation

/// A fresh directory under the system's temporary directory, deleted when this value goes away.
public final class TemporaryDirectory: Sendable {
    /// The directory's URL.
    public let url: URL

    public init(_ prefix: String = "emojiart-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Names of the files directly inside the directory.
    public var fileNames: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
