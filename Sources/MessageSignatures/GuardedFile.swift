import HTTPCaching
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a small file that decides what is trusted (a signing key, the trusted keys) the way
/// such a file must be read: never through a symbolic link (`O_NOFOLLOW`), never blocking on a
/// FIFO (`O_NONBLOCK`), only a regular file (`fstat` on the open descriptor), within a size
/// limit checked before anything is allocated; the descriptor is not inherited (`O_CLOEXEC`).
public enum GuardedFile {
    /// Why a file could not be read.
    public enum Failure: Error, Sendable, Hashable {
        /// There is no such file (`ENOENT`).
        case noSuchFile
        /// The path is a symbolic link.
        case symbolicLink
        /// The path is not a regular file (a directory, a FIFO, a device, ...).
        case notRegularFile
        /// The file holds more than the limit.
        case tooLarge(size: Int64, limit: Int)
        /// Any other error, as the system names it.
        case unreadable(String)
    }

    /// A file's bytes, and its owner and permission bits as `fstat` saw them when it was read.
    public struct Contents: Sendable, Hashable {
        /// The bytes.
        public var bytes: [UInt8]
        /// The owner's user ID.
        public var owner: UInt32
        /// The permission bits (`mode & 0o777`).
        public var permissions: UInt32
        /// How many names the file has (more than 1: a hard link, whose other name another
        /// user may know).
        public var links: Int = 1
    }

    /// This process's effective user ID.
    public static var currentUser: UInt32 { UInt32(geteuid()) }

    /// Why the directory at `path` may not hold a file that decides what is trusted, and what to
    /// do, or `nil` when it may (or does not exist yet: the caller creates it private). Another user
    /// who owns it, or a group or others who may write it or one of its parents, could rename the
    /// file or the directory away and put their own in its place, whatever the file's own mode
    /// (ssh's `StrictModes`; see `StrictModes`). The path is followed: the directory is the
    /// user's choice, and may be a link to one.
    public static func unsafeDirectory(_ path: String) -> (reason: String, fix: String)? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let fix = "chmod 700 \(path), after checking that it is yours"
        if status.st_uid != geteuid() { return ("it is owned by user \(status.st_uid), not by this user (\(geteuid()))", fix) }
        if status.st_mode & 0o022 != 0 {
            return ("its mode is \(String(status.st_mode & 0o777, radix: 8)): group or others may replace the files in it", fix)
        }
        if let parent = StrictModes.unsafeParent(of: path) {
            return ("its parent \(parent.parent) \(parent.problem), who could swap the directory", parent.fix)
        }
        return nil
    }

    /// Reads the file at `path`, at most `limit` bytes.
    public static func read(_ path: String, limit: Int) throws(Failure) -> Contents {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            let code = errno
            switch code {
            case ENOENT: throw .noSuchFile
            case ELOOP: throw .symbolicLink
            default: throw .unreadable(String(cString: strerror(code)))
            }
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unreadable(String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile }
        guard status.st_size >= 0, status.st_size <= Int64(limit) else { throw .tooLarge(size: Int64(status.st_size), limit: limit) }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var total = 0
        while total < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return readSome(descriptor, base + total, buffer.count - total)
            }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw .unreadable(String(cString: strerror(errno))) }
            if count == 0 { break }  // the file shrank while it was read
            total += count
        }
        return Contents(
            bytes: Array(bytes.prefix(total)), owner: UInt32(status.st_uid), permissions: UInt32(status.st_mode & 0o777),
            links: Int(status.st_nlink)
        )
    }
}

extension GuardedFile {
    /// Why a file that must be private (a key) is not used.
    public enum PrivateFileProblem: Error, Sendable, Hashable {
        /// Someone else may know or change it; `fix` says what to run.
        case unsafe(reason: String, fix: String)
        /// It cannot be read, or does not exist.
        case unreadable(reason: String)
    }

    /// Reads a file that must be private, as ssh reads a private key: a regular file, no
    /// symbolic link, owned by this user, with one name, neither readable nor writable by group or
    /// others, at most `limit` bytes.
    public static func readPrivate(_ path: String, limit: Int) throws(PrivateFileProblem) -> Contents {
        let contents: Contents
        do {
            contents = try read(path, limit: limit)
        } catch {
            switch error {
            case .symbolicLink:
                throw .unsafe(reason: "it is a symbolic link", fix: "replace the link with the file itself, mode 0600")
            case .notRegularFile:
                throw .unsafe(reason: "it is not a regular file", fix: "put it in a regular file, mode 0600")
            case let .tooLarge(size, limit):
                throw .unreadable(reason: "it holds \(size) bytes, more than the \(limit) such a file holds")
            case .noSuchFile:
                throw .unreadable(reason: "there is no such file")
            case let .unreadable(reason):
                throw .unreadable(reason: reason)
            }
        }
        guard contents.owner == currentUser else {
            throw .unsafe(
                reason: "it is owned by user \(contents.owner), not by this user (\(currentUser))",
                fix: "chown $(id -u) \(path), after checking that it is yours"
            )
        }
        guard contents.links == 1 else {
            throw .unsafe(
                reason: "it has \(contents.links) names (hard links): it is also a file elsewhere",
                fix: "copy it to a file of its own (cp, then chmod 600), after checking who else has it"
            )
        }
        guard contents.permissions & 0o077 == 0 else {
            throw .unsafe(reason: "its mode is \(String(contents.permissions, radix: 8)): group or others may read or change it", fix: "chmod 600 \(path)")
        }
        return contents
    }
}

/// `read(2)`, named apart from ``GuardedFile/read(_:limit:)``.
private func readSome(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
