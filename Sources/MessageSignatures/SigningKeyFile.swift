import Crypto
public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The gallery's Ed25519 signing key on disk: the raw 32-byte private key, base64-encoded, one
/// line (swift-crypto has no PEM form for Ed25519 keys). Created with mode 0600 in a directory of
/// mode 0700, never logged.
public enum SigningKeyFile {
    /// What can go wrong reading or creating the key file.
    public enum Error: Swift.Error, Sendable, CustomStringConvertible {
        /// The file exists but does not hold a base64 32-byte key.
        case unreadable(path: String, reason: String)
        /// The file or its directory could not be created.
        case cannotCreate(path: String, reason: String)
        /// The file is a symbolic link, not a regular file, not owned by this user, or open to
        /// group or others; `fix` says what to run.
        case unsafe(path: String, reason: String, fix: String)

        public var description: String {
            switch self {
            case let .unreadable(path, reason):
                "the signing key \(path) cannot be used (\(reason)): it must hold one line, the base64 of a raw 32-byte Ed25519 private key; move it away to have a new key made"
            case let .cannotCreate(path, reason):
                "cannot create the signing key \(path) (\(reason)): pass --signing-key FILE, or set XDG_DATA_HOME to a writable directory"
            case let .unsafe(path, reason, fix):
                "the signing key \(path) is not private (\(reason)), so it is not used: \(fix)"
            }
        }
    }

    /// `$XDG_DATA_HOME/emojiart/gallery-signing.key`, or `~/.local/share/emojiart/...`.
    public static var defaultPath: URL {
        DataDirectory.url.appendingPathComponent("gallery-signing.key")
    }

    /// Reads the key at `path`. Like ssh with a private key, refuses a file that is a symbolic
    /// link, not a regular file, not owned by this user, or readable or writable by group or
    /// others: such a key may be known to someone else, and the error says how to fix it.
    public static func read(_ path: URL) throws(Error) -> SigningKey {
        try checkDirectory(of: path)
        let contents: GuardedFile.Contents
        do {
            // One line of base64 of 32 bytes is 45 bytes; anything much larger is not a key.
            contents = try GuardedFile.readPrivate(path.path, limit: 1_024)
        } catch {
            switch error {
            case let .unsafe(reason, fix): throw .unsafe(path: path.path, reason: reason, fix: fix)
            case let .unreadable(reason): throw .unreadable(path: path.path, reason: reason)
            }
        }
        let text = String(decoding: contents.bytes, as: UTF8.self)
        guard let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), raw.count == 32,
              let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw)
        else { throw .unreadable(path: path.path, reason: "not the base64 of 32 bytes") }
        return SigningKey(key)
    }

    /// Refuses a key in a directory another user owns or group or others may write: they could
    /// move the key away, and the next start would make a new one (every app then refuses the
    /// feed as signed by a changed key).
    static func checkDirectory(of path: URL) throws(Error) {
        let directory = path.deletingLastPathComponent().path
        if let (reason, fix) = GuardedFile.unsafeDirectory(directory) {
            throw .unsafe(path: path.path, reason: "its directory \(directory) is not private: \(reason)", fix: fix)
        }
    }

    /// Reads the key at `path`, or creates a new one there when there is no file yet.
    /// - Returns: the key, and whether it was just created.
    public static func readOrCreate(_ path: URL) throws(Error) -> (key: SigningKey, created: Bool) {
        // lstat, not fileExists: a dangling symbolic link is refused by `read`, never replaced.
        var existing = stat()
        if lstat(path.path, &existing) == 0 { return (try read(path), false) }
        try checkDirectory(of: path)
        let key = SigningKey()
        let directory = path.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .cannotCreate(path: path.path, reason: "\(error.localizedDescription)")
        }
        // Again, now that it exists: someone else may have made it in between, in a shared parent.
        try checkDirectory(of: path)
        // O_EXCL: two galleries starting at once never overwrite each other's key.
        let descriptor = open(path.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == EEXIST { return (try read(path), false) }
            throw .cannotCreate(path: path.path, reason: String(cString: strerror(errno)))
        }
        let line = Array((key.rawRepresentation.base64EncodedString() + "\n").utf8)
        let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == line.count, synced else {
            unlink(path.path)
            throw .cannotCreate(path: path.path, reason: "writing failed")
        }
        return (key, true)
    }
}
