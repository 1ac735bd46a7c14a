public import Foundation
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
///   ``ImageLoader/Error/corruptEntry(file:reason:)``, never returned and never a crash. An entry
///   of the older format 1 is deleted and answered as a miss.
/// - The total size stays under ``sizeLimit`` while running: each write evicts least recently
///   used entries (never the one just written), so the limit is exceeded by at most one entry.
/// - Several processes may share a directory: renames are atomic, a file another process
///   removed is a miss, and one it added is found on read. Each process keeps its own index,
///   so the size limit is enforced per process.
///
/// Thread-safe: the index sits behind a `Mutex`; file I/O runs on the calling thread, outside
/// the lock. Call it from a task, not while holding an actor you need to stay responsive.
public final class DiskStorage: Sendable {
    /// The directory entries are stored in.
    public let directory: URL
    /// Largest total size of entries, in bytes.
    public let sizeLimit: Int
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

    /// Creates storage in `directory` (created by ``setUp()`` when missing).
    public init(directory: URL, sizeLimit: Int = 512 * 1024 * 1024, synchronizesWrites: Bool = true, logger: Logger = Logger(label: "ImageCache.DiskStorage")) {
        self.directory = directory
        directoryPath = FilePath(directory.path)
        self.sizeLimit = sizeLimit
        self.synchronizesWrites = synchronizesWrites
        self.logger = logger
        index.withLock { $0.costLimit = sizeLimit }
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
    /// - Throws: ``ImageLoader/Error/diskFailure(path:reason:)``; nothing is half-written.
    public func write(_ image: Image, forKey key: String) throws(ImageLoader.Error) {
        let name = fileName(forKey: key)
        let bytes = DiskEntry.encode(image, key: key)
        let temporary = path(".tmp-\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))")
        do {
            let file = try FileDescriptor.open(
                temporary, .writeOnly, options: [.create, .exclusiveCreate],
                permissions: [.ownerReadWrite, .groupRead, .otherRead]
            )
            try file.closeAfter {
                _ = try file.writeAll(bytes)
                if synchronizesWrites, fsync(file.rawValue) != 0 { throw Errno(rawValue: errno) }
            }
            guard rename(temporary.string, path(name).string) == 0 else { throw Errno(rawValue: errno) }
        } catch {
            _ = unlink(temporary.string)
            throw .diskFailure(path: directory.path, reason: "writing an entry: \(error)")
        }
        let evicted = index.withLock { $0.insert(bytes.count, forKey: name, cost: bytes.count) }
        for (victim, _) in evicted { _ = unlink(path(victim).string) }
    }

    /// Reads and checks `key`'s entry; `nil` when there is none.
    /// - Throws: ``ImageLoader/Error/corruptEntry(file:reason:)`` after deleting a bad entry;
    ///   ``ImageLoader/Error/diskFailure(path:reason:)`` when the file cannot be read.
    public func read(forKey key: String) throws(ImageLoader.Error) -> Image? {
        let name = fileName(forKey: key)
        let bytes: [UInt8]
        do {
            guard let contents = try readFile(path(name)) else {
                index.withLock { _ = $0.removeValue(forKey: name) }
                return nil
            }
            bytes = contents
        } catch {
            throw .diskFailure(path: path(name).string, reason: "reading an entry: \(error)")
        }
        switch DiskEntry.decode(bytes, key: key) {
        case let .success(image):
            // Touch, or adopt an entry another process wrote.
            index.withLock { index in
                if index.value(forKey: name) == nil { index.insert(bytes.count, forKey: name, cost: bytes.count) }
            }
            return image
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
        _ = unlink(path(name).string)
        index.withLock { _ = $0.removeValue(forKey: name) }
    }

    /// Removes `key`'s entry, if any.
    public func remove(forKey key: String) {
        remove(fileNamed: fileName(forKey: key))
    }

    /// Removes every entry this process knows of and any other entry file in the directory.
    public func removeAll() {
        index.withLock { $0.removeAll() }
        for name in (try? listDirectory()) ?? [] where Self.isEntryName(name.name) {
            _ = unlink(path(name.name).string)
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

    /// Reads a whole file; `nil` when it does not exist.
    func readFile(_ path: FilePath) throws -> [UInt8]? {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readOnly)
        } catch Errno.noSuchFileOrDirectory {
            return nil
        }
        return try file.closeAfter {
            let size = Int(try file.seek(offset: 0, from: .end))
            return try [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                count = 0
                while count < size {
                    let read = try file.read(fromAbsoluteOffset: Int64(count), into: UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[count...]))
                    if read == 0 { break }
                    count += read
                }
            }
        }
    }

    /// True for names of the form 64 lowercase hex digits.
    static func isEntryName(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
