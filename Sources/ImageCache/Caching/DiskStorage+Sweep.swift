import Foundation
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

    /// Creates the directory when missing (`0700`), deletes temporary files left by processes that
    /// are no longer running (or not written for an hour: a process id is reused), makes the
    /// directory and entries written before private (a group or others bit is cleared: `0700`,
    /// `0600`; not an entry with a second name, a hard link, whose other name may be a file
    /// elsewhere), and indexes the entries by modification time (oldest least recent).
    ///
    /// Reads only directory entries and their sizes, not file contents, so it is fast (10,000
    /// entries take milliseconds); each entry is checked when it is read.
    /// - Throws: ``ImagePipeline/Error/diskFailure(path:reason:)`` when the directory cannot be
    ///   created or listed.
    @discardableResult
    public func setUp() throws(ImagePipeline.Error) -> SetUpReport {
        let names: [(name: String, size: Int, modified: Int64, mode: mode_t, links: Int)]
        var tightened = 0
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
            names = try listDirectory()
            scans.withLock { $0 += 1 }
        } catch {
            throw .diskFailure(path: directory.path, reason: "cannot create or list the cache directory: \(error)")
        }
        // The directory is the user's choice (it may be a link to one): followed, and a mode that
        // cannot be changed (another owner's directory) is logged, not fatal.
        do {
            if try Self.makePrivate(directory.path, directory: true) { tightened += 1 }
        } catch {
            logger.warning("cannot make the cache directory private (mode 0700): \(error)", metadata: ["directory": "\(directory.path)"])
        }
        var removedTemporary = 0
        var linkedEntries = 0
        var entries: [(name: String, size: Int, modified: Int64)] = []
        for file in names {
            if file.name.hasPrefix(".tmp-") {
                if Self.isLeftover(file.name, modified: file.modified), unlink(path(file.name).string) == 0 { removedTemporary += 1 }
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
        for name in evicted { _ = unlink(path(name).string) }
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

    /// Lists regular files with their size, modification time (nanoseconds since 1970), mode and
    /// number of names (hard links), with `readdir` and `fstatat`.
    func listDirectory() throws -> [(name: String, size: Int, modified: Int64, mode: mode_t, links: Int)] {
        guard let stream = opendir(directory.path) else { throw Errno(rawValue: errno) }
        defer { closedir(stream) }
        let descriptor = dirfd(stream)
        var files: [(name: String, size: Int, modified: Int64, mode: mode_t, links: Int)] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            guard name != ".", name != ".." else { continue }
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
        return files
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

    /// A temporary file is `.tmp-PID-RANDOM`; it is a leftover when process PID is gone.
    static func writerIsGone(_ name: String) -> Bool {
        let parts = name.split(separator: "-")
        guard parts.count == 3, let pid = pid_t(parts[1]) else { return true }
        if pid == getpid() { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }
}
