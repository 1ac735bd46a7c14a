import Foundation
@testable import ImageCache
import SystemPackage
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Cache files as private files, in a real temporary directory: an entry is never read through a
/// symbolic link, never waited on (a FIFO), never allocated for beyond the entry limit; entries are
/// written `0600` in a `0700` directory, and set-up tightens a cache written before with `0644`.
@Suite(.timeLimit(.minutes(3))) struct PrivateFilesTests {
    let directory = TemporaryDirectory()
    let image = Image(data: Array(repeating: 7, count: 4_000), contentType: "image/png")

    func storage(entrySizeLimit: Int = DiskStorage.defaultEntrySizeLimit) throws -> DiskStorage {
        let storage = DiskStorage(directory: directory.url, entrySizeLimit: entrySizeLimit, synchronizesWrites: false)
        try storage.setUp()
        return storage
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        #expect(lstat(path, &info) == 0)
        return info.st_mode & 0o7777
    }

    func entryPath(_ storage: DiskStorage, _ key: String) -> String {
        directory.url.appendingPathComponent(storage.fileName(forKey: key)).path
    }

    /// A valid entry of the key, placed outside the cache and linked in: the link is not followed
    /// (with it followed, the entry would decode and be answered).
    @Test func aSymbolicLinkEntryIsDamageAndIsNotFollowed() throws {
        let storage = try storage()
        let outside = TemporaryDirectory()
        let target = outside.url.appendingPathComponent("planted").path
        try Data(DiskEntry.encode(image, key: "k")).write(to: URL(fileURLWithPath: target))
        #expect(symlink(target, entryPath(storage, "k")) == 0)
        #expect {
            try storage.read(forKey: "k")
        } throws: { error in
            guard case let ImagePipeline.Error.corruptEntry(_, reason) = error else { return false }
            return reason.contains("symbolic link") && reason.contains("not followed")
        }
        #expect(!FileManager.default.fileExists(atPath: entryPath(storage, "k")), "the link is deleted")
        #expect(FileManager.default.fileExists(atPath: target), "its target is left alone")
    }

    /// A FIFO with no writer: a blocking open would wait forever, and this test would never end.
    @Test func aFIFOEntryIsDamageAndDoesNotBlock() throws {
        let storage = try storage()
        #expect(mkfifo(entryPath(storage, "k"), 0o600) == 0)
        #expect {
            try storage.read(forKey: "k")
        } throws: { error in
            guard case let ImagePipeline.Error.corruptEntry(_, reason) = error else { return false }
            return reason.contains("a FIFO, not a regular file")
        }
        #expect(!FileManager.default.fileExists(atPath: entryPath(storage, "k")))
    }

    /// An empty directory where an entry belongs is damage: it goes, and the entry can be written
    /// again. (Before, `unlink` failed on it, and every write of that entry failed too.)
    @Test func anEmptyDirectoryEntryIsDamageAndIsRemoved() throws {
        let storage = try storage()
        let path = entryPath(storage, "k")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(throws: ImagePipeline.Error.self) { try storage.write(image, forKey: "k") }
        #expect {
            try storage.read(forKey: "k")
        } throws: { error in
            guard case let ImagePipeline.Error.corruptEntry(_, reason) = error else { return false }
            return reason.contains("a directory, not a regular file")
        }
        #expect(!FileManager.default.fileExists(atPath: path), "the empty directory is deleted")
        try storage.write(image, forKey: "k")
        #expect(try storage.read(forKey: "k") == image)
    }

    /// A directory that holds something (a file, and a link to a file outside) where an entry
    /// belongs is damage, but is never removed recursively: a directory swapped in, or a link
    /// inside it swapped, by someone who can write the cache directory must not take files
    /// elsewhere with it. It stays as it is, the entry is a miss, and its writes fail in words.
    @Test func aDirectoryEntryThatHoldsFilesIsLeftAsItIs() throws {
        let storage = try storage()
        let path = entryPath(storage, "k")
        let outside = TemporaryDirectory()
        let target = outside.url.appendingPathComponent("kept").path
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try Data([4, 5, 6]).write(to: URL(fileURLWithPath: path + "/inside"))
        #expect(symlink(target, path + "/link") == 0)
        #expect {
            try storage.read(forKey: "k")
        } throws: { error in
            guard case let ImagePipeline.Error.corruptEntry(_, reason) = error else { return false }
            return reason.contains("a directory, not a regular file")
        }
        #expect(FileManager.default.fileExists(atPath: path + "/inside"), "what the directory holds stays")
        #expect(FileManager.default.fileExists(atPath: target), "what its link points to stays")
        #expect(throws: ImagePipeline.Error.self) { try storage.write(image, forKey: "k") }
        storage.remove(forKey: "k")
        storage.removeAll()
        #expect(FileManager.default.fileExists(atPath: path + "/inside"), "remove and removeAll never recurse either")
    }

    /// A cache directory inside a folder others may write (not sticky) or another user owns: they
    /// could swap the directory for one of theirs. Set-up refuses it, naming the parent and the fix,
    /// and changes nothing; a sticky parent (as `/tmp`) is used.
    @Test func aCacheDirectoryWhoseParentOthersMayWriteIsRefused() throws {
        let parent = TemporaryDirectory()
        let cache = parent.url.appendingPathComponent("cache")
        let storage = DiskStorage(directory: cache, synchronizesWrites: false)
        try storage.setUp()
        try storage.write(image, forKey: "k")
        #expect(chmod(parent.url.path, 0o777) == 0)
        #expect {
            try storage.setUp()
        } throws: { error in
            guard case let ImagePipeline.Error.diskFailure(_, reason) = error else { return false }
            return reason.contains("its parent \(parent.url.path) may be written by group or others (mode 777)")
                && reason.contains("chmod go-w \(parent.url.path)") && reason.contains("nothing in it was changed")
        }
        #expect(chmod(parent.url.path, 0o1777) == 0)
        #expect(try storage.setUp().entries == 1, "a sticky parent, as /tmp, passes")
        #expect(chmod(parent.url.path, 0o755) == 0 && chown(parent.url.path, 65534, 65534) == 0)
        #expect {
            try storage.setUp()
        } throws: { error in
            guard case let ImagePipeline.Error.diskFailure(_, reason) = error else { return false }
            return reason.contains("its parent \(parent.url.path) is owned by user 65534")
        }
    }

    /// A cache directory another user owns: they could put entries in it (a planted thumbnail has
    /// no digest to catch it). Set-up refuses it and changes nothing; an entry file of another
    /// user in the cache's own directory is damage, never read.
    @Test func anotherUsersDirectoryOrEntryIsNotUsed() throws {
        let storage = try storage()
        try storage.write(image, forKey: "k")
        #expect(chown(entryPath(storage, "k"), 65534, 65534) == 0)
        #expect {
            try storage.read(forKey: "k")
        } throws: { error in
            guard case let ImagePipeline.Error.corruptEntry(_, reason) = error else { return false }
            return reason.contains("a file of user 65534, not of this user")
        }
        #expect(!FileManager.default.fileExists(atPath: entryPath(storage, "k")))
        try storage.write(image, forKey: "k")
        #expect(chown(directory.url.path, 65534, 65534) == 0)
        #expect {
            try storage.setUp()
        } throws: { error in
            guard case let ImagePipeline.Error.diskFailure(_, reason) = error else { return false }
            return reason.contains("owned by user 65534, not by this user") && reason.contains("nothing in it was changed")
        }
        #expect(mode(directory.url.path) & 0o777 == 0o700 && FileManager.default.fileExists(atPath: entryPath(storage, "k")))
    }

    /// A socket where an entry belongs: `open` says ENXIO, which is damage (deleted, fetched
    /// again), not a failure of the disk (which would be reported as such at every start).
    @Test func aSocketEntryIsDamageNotADiskFailure() throws {
        let storage = try storage()
        let path = entryPath(storage, "k")
        // A socket's file, as `bind` leaves it (its path would be too long for a `sockaddr_un`).
        #expect(mknod(path, S_IFSOCK | 0o600, 0) == 0, "mknod: \(errno)")
        #expect {
            try storage.read(forKey: "k")
        } throws: { error in
            guard case let ImagePipeline.Error.corruptEntry(_, reason) = error else { return false }
            return reason.contains("a socket or a device, not a regular file")
        }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// A valid entry over the entry limit is refused from its `fstat` size, before anything is
    /// allocated or read (read, it would decode and be answered).
    @Test func anEntryOverTheEntryLimitIsNotRead() throws {
        let storage = try storage(entrySizeLimit: 1_024)
        try Data(DiskEntry.encode(image, key: "k")).write(to: URL(fileURLWithPath: entryPath(storage, "k")))
        #expect {
            try storage.read(forKey: "k")
        } throws: { error in
            guard case let ImagePipeline.Error.corruptEntry(_, reason) = error else { return false }
            return reason.contains("over the 1024-byte entry limit")
        }
        #expect(!FileManager.default.fileExists(atPath: entryPath(storage, "k")))
        // And one that big is not written either.
        #expect(throws: ImagePipeline.Error.self) { try storage.write(image, forKey: "k") }
    }

    /// A sparse file of 8 GiB: refused at once, with no 8 GiB allocation.
    @Test func aHugeSparseEntryIsRefusedWithoutAllocating() throws {
        let storage = try storage()
        let path = entryPath(storage, "k")
        let file = try FileDescriptor.open(FilePath(path), .writeOnly, options: [.create], permissions: .ownerReadWrite)
        try file.closeAfter { #expect(ftruncate(file.rawValue, 8 << 30) == 0) }
        #expect {
            try storage.read(forKey: "k")
        } throws: { error in
            guard case let ImagePipeline.Error.corruptEntry(_, reason) = error else { return false }
            return reason.contains("\(8 << 30) bytes, over the")
        }
    }

    @Test func entriesAreWrittenPrivateInAPrivateDirectory() throws {
        let storage = try storage()
        #expect(mode(directory.url.path) == 0o700)
        try storage.write(image, forKey: "k")
        try storage.writeMissing(status: 404, cacheHeaders: nil, forKey: "gone")
        #expect(mode(entryPath(storage, "k")) == 0o600)
        #expect(mode(entryPath(storage, "gone")) == 0o600)
        #expect(try storage.read(forKey: "k") == image)
    }

    /// A directory created by set-up is `0700` down to the cache itself.
    @Test func setUpCreatesAPrivateDirectory() throws {
        let parent = TemporaryDirectory()
        let nested = parent.url.appendingPathComponent("a/b/cache")
        try DiskStorage(directory: nested, synchronizesWrites: false).setUp()
        #expect(mode(nested.path) == 0o700)
    }

    /// A cache directory the user gave as a symbolic link to a directory is followed (it is their
    /// choice, unlike a link planted as an entry): set-up, writes and reads work, and the directory
    /// it names is made private.
    @Test func aCacheDirectoryGivenAsALinkIsFollowed() throws {
        let parent = TemporaryDirectory()
        let real = parent.url.appendingPathComponent("real")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: false)
        #expect(chmod(real.path, 0o755) == 0)
        let link = parent.url.appendingPathComponent("link")
        #expect(symlink(real.path, link.path) == 0)
        let storage = DiskStorage(directory: link, synchronizesWrites: false)
        let report = try storage.setUp()
        #expect(report.tightenedModes == 1)
        #expect(mode(real.path) == 0o700)
        try storage.write(image, forKey: "k")
        #expect(try storage.read(forKey: "k") == image)
    }

    /// An entry with a second name (a hard link) keeps its mode at set-up: before, set-up made a
    /// file elsewhere private through a link planted among the entries (`0644` to `0600`), which
    /// run as root could change any file on the volume (attacker round 3). The entry itself is
    /// kept (a `cp -al` backup links every entry), and read as any entry is: checked whole.
    @Test func aHardLinkedEntryKeepsItsModeAndItsOtherNamesFile() throws {
        let outside = TemporaryDirectory()
        let target = outside.url.appendingPathComponent("keep.txt").path
        try Data(DiskEntry.encode(image, key: "k")).write(to: URL(fileURLWithPath: target))
        #expect(chmod(target, 0o644) == 0)
        let name = DiskStorage(directory: directory.url, synchronizesWrites: false).fileName(forKey: "k")
        #expect(link(target, directory.url.appendingPathComponent(name).path) == 0)

        let storage = DiskStorage(directory: directory.url, synchronizesWrites: false)
        let report = try storage.setUp()
        #expect(report.linkedEntries == 1 && report.entries == 1)
        #expect(mode(target) == 0o644, "the linked file is not touched")
        #expect(try storage.read(forKey: "k")?.data == image.data)
    }

    /// A directory that holds more than the cache (a home directory, `/`, a folder of documents,
    /// given as `--cache-dir`) is refused before anything in it changes: `cache clear --cache-dir /`
    /// made `/` 0700 and locked every other user out (found by a user's trial), and set-up would
    /// also delete what looks like a leftover (`.tmp-...`) and evict what looks like an entry.
    @Test func aDirectoryThatHoldsMoreThanTheCacheIsRefusedAndLeftAsItIs() throws {
        let old = try storage()
        try old.write(image, forKey: "a")
        #expect(chmod(entryPath(old, "a"), 0o644) == 0)
        let notes = directory.url.appendingPathComponent("notes.txt").path
        try Data("mine".utf8).write(to: URL(fileURLWithPath: notes))
        let theirs = directory.url.appendingPathComponent(".tmp-build").path
        try Data("another tool's".utf8).write(to: URL(fileURLWithPath: theirs))
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("photos"), withIntermediateDirectories: false)
        #expect(chmod(directory.url.path, 0o755) == 0)

        let shared = DiskStorage(directory: directory.url, sizeLimit: 1, synchronizesWrites: false)
        #expect {
            try shared.setUp()
        } throws: { error in
            guard case let ImagePipeline.Error.diskFailure(_, reason) = error else { return false }
            return reason.contains("also holds 3 files or folders the cache did not write") && reason.contains("nothing in it was changed")
        }
        #expect(mode(directory.url.path) == 0o755)
        #expect(mode(entryPath(old, "a")) == 0o644)
        #expect(FileManager.default.fileExists(atPath: entryPath(old, "a")), "not evicted, though over the size limit")
        #expect(FileManager.default.fileExists(atPath: notes) && FileManager.default.fileExists(atPath: theirs))
    }

    /// `survey()` (what `emojiart cache stats` shows) changes nothing: a missing directory is not
    /// made, a directory and its entries keep their modes, a temporary file left by a killed
    /// writer stays; and a file given as the directory is a clear failure.
    @Test func aSurveyChangesNothing() throws {
        let missing = directory.url.appendingPathComponent("not-yet")
        let none = try DiskStorage(directory: missing, synchronizesWrites: false).survey()
        #expect(!none.exists && none.entries == 0)
        #expect(!FileManager.default.fileExists(atPath: missing.path))

        let old = try storage()
        try old.write(image, forKey: "a")
        #expect(chmod(entryPath(old, "a"), 0o644) == 0)
        let leftover = directory.url.appendingPathComponent(".tmp-999999999-ab").path
        try Data([1]).write(to: URL(fileURLWithPath: leftover))
        try Data("mine".utf8).write(to: directory.url.appendingPathComponent("notes.txt"))
        #expect(chmod(directory.url.path, 0o755) == 0)

        let survey = try DiskStorage(directory: directory.url, synchronizesWrites: false).survey()
        #expect(survey.exists && survey.entries == 1 && survey.temporaryFiles == 1 && survey.otherFiles == 1)
        #expect(survey.bytes == Int(try FileManager.default.attributesOfItem(atPath: entryPath(old, "a"))[.size] as? UInt64 ?? 0))
        #expect(survey.mode == 0o755)
        #expect(mode(directory.url.path) == 0o755)
        #expect(mode(entryPath(old, "a")) == 0o644)
        #expect(FileManager.default.fileExists(atPath: leftover))

        let file = directory.url.appendingPathComponent("notes.txt")
        #expect {
            try DiskStorage(directory: file, synchronizesWrites: false).survey()
        } throws: { error in
            guard case let ImagePipeline.Error.diskFailure(_, reason) = error else { return false }
            return reason.contains("a file, not a directory")
        }
    }

    /// A cache written by an older build (`0644` entries in a `0755` directory) is made private by
    /// set-up; a symbolic link in it is not followed to change what it points at.
    @Test func setUpTightensACacheWrittenBefore() throws {
        let old = try storage()
        try old.write(image, forKey: "a")
        try old.write(image, forKey: "b")
        #expect(chmod(entryPath(old, "a"), 0o644) == 0)
        #expect(chmod(entryPath(old, "b"), 0o640) == 0)
        #expect(chmod(directory.url.path, 0o755) == 0)
        let outside = TemporaryDirectory()
        let target = outside.url.appendingPathComponent("someone-elses").path
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: target))
        #expect(chmod(target, 0o644) == 0)
        #expect(symlink(target, entryPath(old, "c")) == 0)

        let report = try DiskStorage(directory: directory.url, synchronizesWrites: false).setUp()
        #expect(report.tightenedModes == 3, "the directory and two entries")
        #expect(mode(directory.url.path) == 0o700)
        #expect(mode(entryPath(old, "a")) == 0o600)
        #expect(mode(entryPath(old, "b")) == 0o600)
        #expect(mode(target) == 0o644, "a link's target is not touched")
        #expect(report.entries == 2)

        let again = try DiskStorage(directory: directory.url, synchronizesWrites: false).setUp()
        #expect(again.tightenedModes == 0)
    }
}
