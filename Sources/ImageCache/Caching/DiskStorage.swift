public import Foundation
public import HTTPCaching
public import Logging
import Synchronization
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// The disk tier: one file per entry in a directory, named by the SHA-256 of its key.
///
/// - Writes go to a temporary file that is renamed into place, so a crash leaves the old entry,
///   the new entry, or a temporary file that ``setUp()`` deletes.
/// - Every read checks the whole entry against its XXH3 checksum and every length in it against
///   the file (see the format in `DiskEntry`); a bad entry is deleted and reported as
///   ``ImagePipeline/Error/corruptEntry(file:reason:)``, never returned and never a crash. An entry
///   of the older format 1 is deleted and answered as a miss.
/// - The total size stays under ``sizeLimit`` while running: each write evicts least recently
///   used entries (never the one just written), so the limit is exceeded by at most one entry.
/// - Several processes may share a directory: renames are atomic, a file another process
///   removed is a miss, and one it added is found on read. Each process keeps its own index,
///   so the size limit is enforced per process.
/// - Entries are private files: written `0600` in a `0700` directory (the cache holds what the
///   user looked at), and ``setUp()`` tightens entries and a directory written before. A read
///   opens the entry with `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC` and checks with `fstat` that it
///   is a regular file of at most ``entrySizeLimit`` bytes before allocating anything: a
///   symbolic link, a FIFO or a huge file is a damaged entry, never followed, waited on or read.
///   Files are removed with `unlinkat` relative to the directory's descriptor, never through a
///   link and never recursively: a folder at an entry's name goes only when it is empty.
/// - Besides images, an entry may remember that the origin does not have a resource (a 404 or
///   410 with a lifetime, RFC 9111 allows storing it): see ``Entry/missing(status:cacheHeaders:expectedSHA256:)``.
///
/// Thread-safe: the index sits behind a `Mutex`; file I/O runs on the calling thread, outside
/// the lock. Call it from a task, not while holding an actor you need to stay responsive.
public final class DiskStorage: Sendable {
    /// The directory entries are stored in.
    public let directory: URL
    /// Largest total size of entries, in bytes.
    public let sizeLimit: Int
    /// Largest size of one entry file, in bytes: a larger file is damage (never allocated or
    /// read), and a larger image is not stored.
    public let entrySizeLimit: Int
    /// Whether each write is flushed to the device (`fsync`) before it is renamed into place,
    /// so an entry survives a power loss as well as a killed process.
    public let synchronizesWrites: Bool
    let logger: Logger
    /// Index of entry file names by recency, with their sizes as cost.
    let index = Mutex(LRUCache<String, Int>())
    let scans = Mutex(0)
    private let directoryPath: FilePath

    /// How many times ``setUp()`` has listed the directory.
    public var directoryScans: Int { scans.withLock { $0 } }

    /// What one entry holds.
    public enum Entry: Sendable, Equatable {
        /// An image.
        case image(Image)
        /// The origin answered `status` (404 or 410) with `cacheHeaders` to a request that
        /// expected `expectedSHA256` (``ImageRequest/expectedSHA256``): the resource is known to
        /// be missing while the headers say that answer is fresh, for a request expecting the same.
        case missing(status: Int, cacheHeaders: CacheHeaders?, expectedSHA256: String?)
    }

    /// The default ``entrySizeLimit``: 64 MiB, above ``HTTPImageFetcher``'s 50 MB body limit
    /// with room for the key and metadata.
    public static let defaultEntrySizeLimit = 64 * 1024 * 1024

    /// Creates storage in `directory` (created by ``setUp()`` when missing).
    public init(
        directory: URL, sizeLimit: Int = 512 * 1024 * 1024, entrySizeLimit: Int = DiskStorage.defaultEntrySizeLimit,
        synchronizesWrites: Bool = true, logger: Logger = Logger(label: "ImageCache.DiskStorage")
    ) {
        self.directory = directory
        directoryPath = FilePath(directory.path)
        self.sizeLimit = sizeLimit
        self.entrySizeLimit = max(0, entrySizeLimit)
        self.synchronizesWrites = synchronizesWrites
        self.logger = logger
        index.withLock { $0.costLimit = sizeLimit }
    }

    /// Whether the index lists an entry for `key`: no file is read, no recency changes, and
    /// the entry's freshness and integrity are not checked (a read still may find it damaged or
    /// stale). For deciding how to answer before deciding to wait.
    public func contains(key: String) -> Bool {
        let name = fileName(forKey: key)
        return index.withLock { $0.peek(name) != nil }
    }

    /// The file name of `key`'s entry: 64 hex digits, whatever the key contains, so no key can
    /// name a path outside the directory or an over-long file name.
    public func fileName(forKey key: String) -> String {
        SHA256Hex.digest(Array(key.utf8))
    }

    /// The path of the entry file `name`. The directory's path is parsed once, at `init`: this
    /// runs on every read.
    func path(_ name: String) -> FilePath {
        directoryPath.appending(name)
    }

    /// Writes `image` under `key`, atomically, then evicts to stay under the size limit.
    /// - Throws: ``ImagePipeline/Error/diskFailure(path:reason:)``; nothing is half-written.
    public func write(_ image: Image, forKey key: String) throws(ImagePipeline.Error) {
        try write(DiskEntry.encode(image, key: key), forKey: key)
    }

    /// Remembers that the origin answered `status` (404 or 410) for `key`, with `cacheHeaders`
    /// (whose lifetime says for how long), to a request that expected `expectedSHA256`, replacing
    /// any entry of the key.
    /// - Throws: ``ImagePipeline/Error/diskFailure(path:reason:)``; nothing is half-written.
    public func writeMissing(
        status: Int, cacheHeaders: CacheHeaders?, expectedSHA256: String? = nil, forKey key: String
    ) throws(ImagePipeline.Error) {
        guard DiskEntry.missingStatuses.contains(status) else {
            throw .diskFailure(path: directory.path, reason: "a known-missing entry is for 404 or 410, not \(status)")
        }
        try write(DiskEntry.encodeMissing(status: status, cacheHeaders: cacheHeaders, expectedSHA256: expectedSHA256, key: key), forKey: key)
    }

    /// Writes an entry's bytes: a private temporary file (0600), renamed into place.
    private func write(_ bytes: [UInt8], forKey key: String) throws(ImagePipeline.Error) {
        let name = fileName(forKey: key)
        guard bytes.count <= entrySizeLimit else {
            throw .diskFailure(path: directory.path, reason: "an entry of \(bytes.count) bytes is over the \(entrySizeLimit)-byte entry limit; it was not stored")
        }
        let temporary = path(".tmp-\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))")
        do {
            let file = try FileDescriptor.open(
                temporary, .writeOnly, options: [.create, .exclusiveCreate, .noFollow, .closeOnExec],
                permissions: [.ownerReadWrite]
            )
            try file.closeAfter {
                _ = try file.writeAll(bytes)
                if synchronizesWrites, fsync(file.rawValue) != 0 { throw Errno(rawValue: errno) }
            }
            guard rename(temporary.string, path(name).string) == 0 else { throw Errno(rawValue: errno) }
        } catch {
            if let name = temporary.lastComponent?.string { unlinkFile(name) }
            throw .diskFailure(path: directory.path, reason: "writing an entry: \(error)")
        }
        let evicted = index.withLock { $0.insert(bytes.count, forKey: name, cost: bytes.count) }
        for (victim, _) in evicted { unlinkFile(victim) }
    }

    /// Reads and checks `key`'s image; `nil` when there is none, or when the entry remembers that
    /// the origin does not have it (see ``readEntry(forKey:)``).
    /// - Throws: ``ImagePipeline/Error/corruptEntry(file:reason:)`` after deleting a bad entry;
    ///   ``ImagePipeline/Error/diskFailure(path:reason:)`` when the file cannot be read.
    public func read(forKey key: String) throws(ImagePipeline.Error) -> Image? {
        guard case let .image(image) = try readEntry(forKey: key) else { return nil }
        return image
    }

    /// Reads and checks `key`'s entry, an image or a known-missing one; `nil` when there is none.
    /// - Throws: ``ImagePipeline/Error/corruptEntry(file:reason:)`` after deleting a bad entry (a
    ///   symbolic link, a FIFO or another non-regular file, one over ``entrySizeLimit``, or bytes
    ///   that fail their checks); ``ImagePipeline/Error/diskFailure(path:reason:)`` when the file
    ///   cannot be read.
    public func readEntry(forKey key: String) throws(ImagePipeline.Error) -> Entry? {
        let name = fileName(forKey: key)
        let bytes: [UInt8]
        do {
            switch try readFile(path(name)) {
            case .absent:
                index.withLock { _ = $0.removeValue(forKey: name) }
                return nil
            case let .refused(reason):
                remove(fileNamed: name)
                throw ImagePipeline.Error.corruptEntry(file: name, reason: reason)
            case let .bytes(contents):
                bytes = contents
            }
        } catch let error as ImagePipeline.Error {
            throw error
        } catch {
            throw .diskFailure(path: path(name).string, reason: "reading an entry: \(error)")
        }
        switch DiskEntry.decodeEntry(bytes, key: key) {
        case let .success(content):
            // Touch, or adopt an entry another process wrote.
            index.withLock { index in
                if index.value(forKey: name) == nil { index.insert(bytes.count, forKey: name, cost: bytes.count) }
            }
            switch content {
            case let .image(image): return .image(image)
            case let .missing(status, headers, expected): return .missing(status: status, cacheHeaders: headers, expectedSHA256: expected)
            }
        case let .failure(.outdatedVersion(version)):
            // Not damage: an entry of an older build. Dropped, and fetched again as a miss.
            remove(fileNamed: name)
            logger.info("dropped a cache entry of format version \(version)", metadata: ["file": "\(name)"])
            return nil
        case let .failure(problem):
            remove(fileNamed: name)
            throw .corruptEntry(file: name, reason: problem.description)
        }
    }

    private func remove(fileNamed name: String) {
        if unlinkFile(name) == EISDIR {
            // A directory where an entry belongs fails every write of that entry. Only an empty
            // one goes: one that holds anything is left as it is (never removed recursively, so
            // never through a link swapped in by someone who can write the directory).
            if !removeEmptyDirectory(name) {
                logger.warning(
                    "a folder stands where a cache entry belongs and is not empty: it was left as it is; remove it by hand",
                    metadata: ["path": "\(path(name).string)"])
            }
        }
        index.withLock { _ = $0.removeValue(forKey: name) }
    }

    /// Removes the directory's file `name` with `unlinkat` relative to the directory's
    /// descriptor: the directory's path is resolved once, and a link at `name` is removed, never
    /// followed. Returns `nil` when it was removed, else the `errno` of the failure.
    @discardableResult
    func unlinkFile(_ name: String) -> Int32? {
        withDirectoryDescriptor { unlinkat($0, name, 0) }
    }

    /// Removes `name` if it is an empty directory (`AT_REMOVEDIR`, never recursive).
    private func removeEmptyDirectory(_ name: String) -> Bool {
        withDirectoryDescriptor { unlinkat($0, name, AT_REMOVEDIR) } == nil
    }

    /// Runs `call` (a system call returning 0 or -1) on a descriptor of the cache directory, open
    /// for its duration; `nil` when it succeeded, else its `errno` (read before anything else
    /// runs), or the `errno` of opening the directory.
    private func withDirectoryDescriptor(_ call: (CInt) -> CInt) -> Int32? {
        let descriptor = open(directoryPath.string, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return errno }
        let result = call(descriptor)
        let failure = result == 0 ? nil : errno
        close(descriptor)
        return failure
    }

    /// Removes `key`'s entry, if any.
    public func remove(forKey key: String) {
        remove(fileNamed: fileName(forKey: key))
    }

    /// Removes every entry this process knows of and any other entry file in the directory.
    public func removeAll() {
        index.withLock { $0.removeAll() }
        for name in (try? listDirectory())?.files ?? [] where Self.isEntryName(name.name) {
            remove(fileNamed: name.name)
        }
    }

    /// The entry file names this process knows of, most recently used first.
    public var persistedFiles: [String] {
        index.withLock { $0.keysByRecency }
    }

    /// Entries and total bytes this process knows of.
    public var usage: (entries: Int, bytes: Int) {
        index.withLock { ($0.count, $0.totalCost) }
    }

    /// What ``readFile(_:)`` found.
    enum FileRead: Equatable {
        /// No such file.
        case absent
        /// Not a file to read, and why: not followed, not waited on, not allocated for.
        case refused(String)
        /// The whole file.
        case bytes([UInt8])
    }

    /// Reads a whole entry file, as a private file: a symbolic link is not followed
    /// (`O_NOFOLLOW`), a FIFO or device is not waited on (`O_NONBLOCK`, then `fstat` says what
    /// it is), and nothing is allocated for a file over ``entrySizeLimit``.
    func readFile(_ path: FilePath) throws -> FileRead {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readOnly, options: [.noFollow, .nonBlocking, .closeOnExec])
        } catch Errno.noSuchFileOrDirectory {
            return .absent
        } catch Errno.tooManySymbolicLinkLevels {
            return .refused("a symbolic link, not a regular file: it was not followed (the cache directory should be written by this cache only)")
        } catch Errno.noSuchAddressOrDevice {
            // What `open` says of a socket (and of a device with no driver): no entry, not a
            // failure of the disk.
            return .refused("a socket or a device, not a regular file: it was not read (the cache directory should be written by this cache only)")
        }
        return try file.closeAfter {
            var info = stat()
            guard fstat(file.rawValue, &info) == 0 else { throw Errno(rawValue: errno) }
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                return .refused("\(Self.fileType(info.st_mode)), not a regular file: it was not read (the cache directory should be written by this cache only)")
            }
            // Another user's file was not written by this cache (and a variant has no digest to
            // check it by).
            guard info.st_uid == geteuid() else {
                return .refused("a file of user \(info.st_uid), not of this user (\(geteuid())): it was not read (the cache directory should be written by this cache only)")
            }
            // st_size is an off_t: compared before it becomes a count.
            guard info.st_size >= 0, info.st_size <= off_t(entrySizeLimit) else {
                return .refused("\(info.st_size) bytes, over the \(entrySizeLimit)-byte entry limit: it was not read")
            }
            let size = Int(info.st_size)
            let bytes = try [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                count = 0
                while count < size {
                    let read = try file.read(fromAbsoluteOffset: Int64(count), into: UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[count...]))
                    if read == 0 { break }
                    count += read
                }
            }
            return .bytes(bytes)
        }
    }

    /// A file type for messages: "a FIFO", "a directory", ...
    static func fileType(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFDIR: "a directory"
        case S_IFLNK: "a symbolic link"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "a file of type \(mode & S_IFMT)"
        }
    }

    /// True for names of the form 64 lowercase hex digits.
    static func isEntryName(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
