import Foundation
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
        /// Entries evicted because the directory was over the size limit.
        public var evicted: Int
    }

    /// Creates the directory when missing, deletes temporary files left by processes that are no
    /// longer running, and indexes the entries by modification time (oldest least recent).
    ///
    /// Reads only directory entries and their sizes, not file contents, so it is fast (10,000
    /// entries take milliseconds); each entry is checked when it is read.
    /// - Throws: ``ImageLoader/Error/diskFailure(path:reason:)`` when the directory cannot be
    ///   created or listed.
    @discardableResult
    public func setUp() throws(ImageLoader.Error) -> SetUpReport {
        let names: [(name: String, size: Int, modified: Int64)]
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            names = try listDirectory()
            scans.withLock { $0 += 1 }
        } catch {
            throw .diskFailure(path: directory.path, reason: "cannot create or list the cache directory: \(error)")
        }
        var removedTemporary = 0
        var entries: [(name: String, size: Int, modified: Int64)] = []
        for file in names {
            if file.name.hasPrefix(".tmp-") {
                if Self.writerIsGone(file.name), unlink(path(file.name).string) == 0 { removedTemporary += 1 }
            } else if Self.isEntryName(file.name) {
                entries.append(file)
            }
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
        return SetUpReport(entries: count, bytes: bytes, removedTemporaryFiles: removedTemporary, evicted: evicted.count)
    }

    /// Lists regular files with their size and modification time, with `readdir` and `fstatat`.
    func listDirectory() throws -> [(name: String, size: Int, modified: Int64)] {
        guard let stream = opendir(directory.path) else { throw Errno(rawValue: errno) }
        defer { closedir(stream) }
        let descriptor = dirfd(stream)
        var files: [(name: String, size: Int, modified: Int64)] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            guard name != ".", name != ".." else { continue }
            var info = stat()
            guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            files.append((name, Int(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)))
        }
        return files
    }

    /// A temporary file is `.tmp-PID-RANDOM`; it is a leftover when process PID is gone.
    static func writerIsGone(_ name: String) -> Bool {
        let parts = name.split(separator: "-")
        guard parts.count == 3, let pid = pid_t(parts[1]) else { return true }
        if pid == getpid() { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }
}
