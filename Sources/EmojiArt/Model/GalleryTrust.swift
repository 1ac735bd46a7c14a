public import Foundation
public import MessageSignatures
#if canImport(Glibc)
import Glibc
#endif

/// Which gallery keys this app accepts for a feed.
public enum GalleryTrust: Sendable {
    /// Only the key with this fingerprint (`--gallery-key`).
    case pinned(fingerprint: String)
    /// The key remembered for the gallery, or, at first contact, the gallery's own key, which
    /// is then remembered (trust on first use, as SSH does).
    case firstUse(TrustStore)

    /// Trust on first use with the shared trust file.
    public static var `default`: GalleryTrust { .firstUse(TrustStore()) }
}

/// The gallery keys this machine trusts, by gallery origin (`http://host:port`), in a JSON file
/// under the data directory (`$XDG_DATA_HOME/emojiart/trusted-galleries.json`), not the cache
/// directory: clearing the cache must not reset trust.
///
/// Instances on one machine share the file: each change is a read-modify-write under an
/// exclusive `flock`, written to a temporary file and renamed into place. Thread-safe.
public struct TrustStore: Sendable {
    /// The trust file.
    public let file: URL

    /// A store in `file`; by default the data directory's `trusted-galleries.json`.
    public init(file: URL = DataDirectory.url.appendingPathComponent("trusted-galleries.json")) {
        self.file = file
    }

    /// What can go wrong with the trust file.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What happened.
        public var description: String
    }

    /// The key trusted for `gallery`, if any.
    public func key(for gallery: URL) throws(Failure) -> JSONWebKey? {
        try withLock { () throws(Failure) in try Self.read(file) }[Self.origin(gallery)]
    }

    /// Trusts `key` for `gallery` from now on (replacing any earlier key).
    /// - Returns: the key trusted before, if any.
    @discardableResult
    public func trust(_ key: JSONWebKey, for gallery: URL) throws(Failure) -> JSONWebKey? {
        try withLock { () throws(Failure) in
            var keys = try Self.read(file)
            let before = keys.updateValue(key, forKey: Self.origin(gallery))
            try Self.write(keys, to: file)
            return before
        }
    }

    /// `scheme://host:port` of a gallery URL: what one trust entry is for.
    static func origin(_ url: URL) -> String {
        let scheme = url.scheme ?? "http"
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host ?? ""):\(port)"
    }

    private func withLock<T>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        let directory = file.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw Failure(description: "cannot create \(directory.path) for the trusted gallery keys (\(error.localizedDescription)): set XDG_DATA_HOME to a writable directory")
        }
        let lock = open(file.path + ".lock", O_RDWR | O_CREAT, 0o600)
        guard lock >= 0 else { throw Failure(description: "cannot open \(file.path).lock: \(String(cString: strerror(errno)))") }
        defer { close(lock) }
        flock(lock, LOCK_EX)
        defer { flock(lock, LOCK_UN) }
        return try body()
    }

    private static func read(_ file: URL) throws(Failure) -> [String: JSONWebKey] {
        guard let data = FileManager.default.contents(atPath: file.path) else { return [:] }
        do {
            return try JSONDecoder().decode([String: JSONWebKey].self, from: data)
        } catch {
            throw Failure(description: "the trust file \(file.path) is not readable JSON (\(error)): fix or delete it, then trust the gallery again")
        }
    }

    private static func write(_ keys: [String: JSONWebKey], to file: URL) throws(Failure) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            try encoder.encode(keys).write(to: file, options: .atomic)
        } catch {
            throw Failure(description: "cannot write the trust file \(file.path): \(error.localizedDescription)")
        }
    }
}
