import Foundation
import HTTPCaching
import Logging
import Synchronization
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

extension DiskStorage {
    /// What ``DiskStorage/setUp()`` found.
    public struct SetUpReport: Sendable, Hashable {
        /// Entries indexed.
        public var entries: Int
        /// Their total size in bytes.
        public var bytes: Int
        /// Temporary files left by killed processes, deleted.
        public var removedTemporaryFiles: Int
        /// Entries with a second name (a hard link: a `cp -al` backup, a deduplicating tool, or
        /// a name planted for a file elsewhere): kept, but their mode is left as it is, so the
        /// other name's file is never changed through them.
        public var linkedEntries: Int = 0
        /// Entries evicted because the directory was over the size limit.
        public var evicted: Int
        /// Entries (and the directory) that others could read, made private (`0600`, `0700`).
        public var tightenedModes: Int = 0
    }

    /// What the directory holds, read without changing anything (``survey()``).
    public struct Survey: Sendable, Hashable {
        /// Whether the directory exists; `false` before anything was cached.
        public var exists: Bool
        /// Entry files, whatever their state (each is checked when it is read).
        public var entries: Int
        /// Their total size in bytes.
        public var bytes: Int
        /// Entries with a second name (hard links).
        public var linkedEntries: Int
        /// Temporary files: a write under way, or one left by a killed process.
        public var temporaryFiles: Int
        /// Files and folders that are not the cache's own.
        public var otherFiles: Int
        /// The directory's permission bits, such as `0o700` (`0` when it does not exist).
        public var mode: Int
    }

    /// Lists the directory without creating it, changing a mode, deleting a file or indexing:
    /// what `emojiart cache stats` shows. A directory that does not exist is an empty survey.
    /// - Throws: ``ImagePipeline/Error/diskFailure(path:reason:)`` when the path cannot be listed
    ///   (not a directory, no permission).
    public func survey() throws(ImagePipeline.Error) -> Survey {
        var info = stat()
        guard stat(directory.path, &info) == 0 else {
            if errno == ENOENT { return Survey(exists: false, entries: 0, bytes: 0, linkedEntries: 0, temporaryFiles: 0, otherFiles: 0, mode: 0) }
            throw .diskFailure(path: directory.path, reason: "cannot read the cache directory: \(Errno(rawValue: errno))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw .diskFailure(path: directory.path, reason: "the cache directory is a file, not a directory")
        }
        let listing: (files: [ListedFile], others: Int)
        do {
            listing = try listDirectory()
        } catch {
            throw .diskFailure(path: directory.path, reason: "cannot list the cache directory: \(error)")
        }
        let entries = listing.files.filter { Self.isEntryName($0.name) }
        return Survey(
            exists: true, entries: entries.count, bytes: entries.reduce(0) { $0 + $1.size },
            linkedEntries: entries.count(where: { $0.links > 1 }), temporaryFiles: listing.files.count(where: { Self.isTemporaryName($0.name) }), otherFiles: listing.others,
            mode: Int(info.st_mode & 0o7777)
        )
    }

    /// Creates the directory when missing (`0700`), deletes temporary files left by processes that
    /// are no longer running (or not written for an hour: a process id is reused), makes the
    /// directory and entries written before private (a group or others bit is cleared: `0700`,
    /// `0600`; not an entry with a second name, a hard link, whose other name may be a file
    /// elsewhere), and indexes the entries by modification time (oldest least recent).
    ///
    /// The directory must be the cache's own: one that holds anything the cache does not write
    /// (a home directory, `/`, a folder of documents given as the cache's) is refused before
    /// anything in it is changed, since set-up would make it private, delete what looks like a
    /// leftover and evict what looks like an entry, and clearing would delete those.
    ///
    /// A directory another user owns is refused too (they could put entries in it), and so is
    /// one with a parent that another user owns, or that group or others may write (but for a
    /// sticky one such as `/tmp`): they could swap it for one of theirs (ssh's `StrictModes`:
    /// `HTTPCaching.StrictModes`).
    ///
    /// Reads only directory entries and their sizes, not file contents, so it is fast (10,000
    /// entries take milliseconds); each entry is checked when it is read.
    /// - Throws: ``ImagePipeline/Error/diskFailure(path:reason:)`` when the directory cannot be
    ///   created or listed, holds files or folders the cache did not write, is another user's, or
    ///   has a parent others may write.
    @discardableResult
    public func setUp() throws(ImagePipeline.Error) -> SetUpReport {
        let names: [ListedFile]
        let others: Int
        var tightened = 0
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw .diskFailure(path: directory.path, reason: "cannot create the cache directory: \(error)")
        }
        // Someone who may write a parent could swap the directory for one of theirs; whoever owns
        // the directory may put entries in it (a variant has no digest to check it by).
        if let parent = StrictModes.unsafeParent(of: directory.path) {
            throw .diskFailure(path: directory.path, reason: "the cache directory is not safe to use: \(parent); nothing in it was changed")
        }
        var owner = stat()
        if stat(directory.path, &owner) == 0, owner.st_uid != geteuid() {
            throw .diskFailure(
                path: directory.path,
                reason: "the cache directory is owned by user \(owner.st_uid), not by this user (\(geteuid())), who could put entries in it; "
                    + "nothing in it was changed: give the cache a directory of your own"
            )
        }
        do {
            (names, others) = try listDirectory()
            scans.withLock { $0 += 1 }
        } catch {
            throw .diskFailure(path: directory.path, reason: "cannot list the cache directory: \(error)")
        }
        guard others == 0 else {
            throw .diskFailure(
                path: directory.path,
                reason: "the cache directory also holds \(Self.others(others)) the cache did not write, so it is not used and nothing in it "
                    + "was changed; give the cache a directory of its own (an empty or new one)"
            )
        }
        // The directory is the user's choice (it may be a link to one): followed; a mode that
        // cannot be changed is logged, not fatal.
        do {
            if try Self.makePrivate(directory.path, directory: true) { tightened += 1 }
        } catch {
            logger.warning("cannot make the cache directory private (mode 0700): \(error)", metadata: ["directory": "\(directory.path)"])
        }
        var removedTemporary = 0
        var linkedEntries = 0
        var entries: [(name: String, size: Int, modified: Int64)] = []
        for file in names {
            if Self.isTemporaryName(file.name) {
                if Self.isLeftover(file.name, modified: file.modified), unlinkFile(file.name) == nil { removedTemporary += 1 }
            } else if Self.isEntryName(file.name) {
                if file.links > 1 { linkedEntries += 1 }
                if file.mode & 0o077 != 0, (try? Self.makePrivate(path(file.name).string, directory: false)) == true {
                    tightened += 1
                }
                entries.append((file.name, file.size, file.modified))
            }
        }
        if linkedEntries > 0 {
            logger.notice("\(linkedEntries) cache entries have a second name (hard links): their modes are left as they are", metadata: ["directory": "\(directory.path)"])
        }
        entries.sort { $0.modified < $1.modified }
        let evicted = index.withLock { index in
            index.removeAll()
            var evicted: [String] = []
            for entry in entries {
                evicted += index.insert(entry.size, forKey: entry.name, cost: entry.size).map(\.key)
            }
            return evicted
        }
        for name in evicted { unlinkFile(name) }
        let (count, bytes) = usage
        return SetUpReport(
            entries: count, bytes: bytes, removedTemporaryFiles: removedTemporary, linkedEntries: linkedEntries, evicted: evicted.count,
            tightenedModes: tightened
        )
    }

    /// Clears the group and others bits of the file or directory at `path`. An entry is opened
    /// without following a symbolic link (a link is left alone), and one with a second name (a
    /// hard link to a file elsewhere) is left alone too; the directory, which the user chose, is
    /// followed. Returns whether the mode changed.
    static func makePrivate(_ path: String, directory: Bool) throws -> Bool {
        let file = try FileDescriptor.open(
            FilePath(path), .readOnly, options: directory ? [.directory, .closeOnExec] : [.noFollow, .nonBlocking, .closeOnExec]
        )
        return try file.closeAfter {
            var info = stat()
            guard fstat(file.rawValue, &info) == 0 else { throw Errno(rawValue: errno) }
            let mode = info.st_mode & 0o7777
            guard mode & 0o077 != 0, directory || info.st_nlink == 1 else { return false }
            guard fchmod(file.rawValue, mode & ~0o077) == 0 else { throw Errno(rawValue: errno) }
            return true
        }
    }

    /// "1 file or folder", "2 files or folders".
    static func others(_ count: Int) -> String {
        count == 1 ? "1 file or folder" : "\(count) files or folders"
    }

    /// A regular file of the directory: its name, size, modification time (nanoseconds since
    /// 1970), mode and number of names (hard links).
    typealias ListedFile = (name: String, size: Int, modified: Int64, mode: mode_t, links: Int)

    /// Lists the directory's regular files, with `readdir` and `fstatat`, and counts the names of
    /// any type that are not the cache's own (neither an entry's nor a temporary file's).
    func listDirectory() throws -> (files: [ListedFile], others: Int) {
        guard let stream = opendir(directory.path) else { throw Errno(rawValue: errno) }
        defer { closedir(stream) }
        let descriptor = dirfd(stream)
        var files: [ListedFile] = []
        var others = 0
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            guard name != ".", name != ".." else { continue }
            if !Self.isEntryName(name), !Self.isTemporaryName(name) { others += 1 }
            var info = stat()
            guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            // Anyone who can write the directory sets these: a modification time of any second
            // (`touch -d @9e18`) must order, not overflow.
            let seconds = Int64(info.st_mtim.tv_sec)
            let modified = seconds >= Int64.max / 1_000_000_000 ? Int64.max
                : seconds <= Int64.min / 1_000_000_000 ? Int64.min
                : seconds * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            files.append((name, max(0, Int(info.st_size)), modified, info.st_mode, Int(info.st_nlink)))
        }
        return (files, others)
    }

    /// How long a temporary file of a running process may go unwritten before it counts as a
    /// leftover: a write takes well under a second, and process ids are reused.
    static let temporaryFileLifetime: Int64 = 3_600 * 1_000_000_000

    /// Whether the temporary file `name`, last modified at `modified` (nanoseconds since 1970),
    /// is a leftover: its writer is gone, or it was not written within
    /// ``temporaryFileLifetime``.
    static func isLeftover(_ name: String, modified: Int64, now: Date = Date()) -> Bool {
        if writerIsGone(name) { return true }
        let age = Int64(now.timeIntervalSince1970 * 1e9).subtractingReportingOverflow(modified)
        return age.overflow || age.partialValue > temporaryFileLifetime
    }

    /// Whether `name` is one of the cache's temporary files: `.tmp-PID-RANDOM`, a process id and
    /// hex digits. Another tool's `.tmp-something` is not the cache's.
    static func isTemporaryName(_ name: String) -> Bool {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        return parts.count == 3 && parts[0] == ".tmp" && pid_t(parts[1]) != nil && !parts[2].isEmpty
            && parts[2].utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// A temporary file is `.tmp-PID-RANDOM`; it is a leftover when process PID is gone.
    static func writerIsGone(_ name: String) -> Bool {
        let parts = name.split(separator: "-")
        guard parts.count == 3, let pid = pid_t(parts[1]) else { return true }
        if pid == getpid() { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }
}
