import Foundation
import ImageCache
import Testing
import TestSupport

/// Damage to each part of a stored entry, and entries of the previous format, through a real
/// pipeline, a real directory and a real origin.
@Suite(.timeLimit(.minutes(3))) struct DiskFormatTests {
    let directory = TemporaryDirectory()

    func pipeline() -> ImagePipeline {
        ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
    }

    var entryFiles: [URL] {
        directory.fileNames.filter { $0.count == 64 }.map { directory.url.appendingPathComponent($0) }
    }

    /// Where each part of an entry of `key` (with a content type first in its metadata) sits.
    static func offset(of field: String, key: String, length: Int) -> Int {
        let keyEnd = 32 + key.utf8.count
        return switch field {
        case "magic": 0
        case "version": 4
        case "reserved": 6
        case "key length": 8
        case "metadata length": 12
        case "payload length, top byte": 23
        case "key": 32
        case "metadata tag": keyEnd
        case "metadata record length": keyEnd + 2
        case "content type": keyEnd + 6
        case "payload": length - 100
        default: length - 1  // "checksum"
        }
    }

    @Test(arguments: [
        "magic", "version", "reserved", "key length", "metadata length", "payload length, top byte",
        "key", "metadata tag", "metadata record length", "content type", "payload", "checksum",
        "truncated", "empty",
    ])
    func eachDamagedFieldIsACountedMissAndFetchedAgain(field: String) async throws {
        let origin = TestOrigin()
        origin.set("x", .image(payload(7)))
        try await origin.run { (base) async throws in
            let request = ImageRequest(url: base.appendingPathComponent("images/x"))
            _ = try await pipeline().imageStored(for: request)
            let file = try #require(entryFiles.first)
            var bytes = [UInt8](try Data(contentsOf: file))
            switch field {
            case "truncated": bytes.removeLast(bytes.count / 2)
            case "empty": bytes = []
            default: bytes[Self.offset(of: field, key: request.cacheKey, length: bytes.count)] ^= 0xFF
            }
            try Data(bytes).write(to: file)

            let reopened = pipeline()
            #expect(try await reopened.imageStored(for: request).data == payload(7), "a damaged entry must never be served")
            let stats = await reopened.stats()
            #expect(stats.corruptEntries == 1 && stats.diskHits == 0 && stats.originFetches == 1)
            #expect(origin.requests("x") == 2)
            // The refetched entry replaced the damaged one and reads back clean.
            #expect(try reopened.disk?.read(forKey: request.cacheKey)?.data == payload(7))
        }
    }

    /// An entry as format version 1 wrote it: a fixed header with the payload's SHA-256.
    static func versionOneEntry(key: String, data: [UInt8], contentType: String) -> [UInt8] {
        func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        let sha = (0..<32).map { _ in UInt8(0) }  // never read: version 1 is dropped before its hash
        return Array("EMJC".utf8) + [1, 0, 0, 0] + le(UInt64(data.count)) + sha + le(UInt32(key.utf8.count))
            + le(UInt16(contentType.utf8.count)) + le(UInt32(bitPattern: -1)) + le(UInt32(bitPattern: -1))
            + Array(key.utf8) + Array(contentType.utf8) + data
    }

    @Test func entriesOfFormatOneAreDroppedAsPlainMisses() async throws {
        let origin = TestOrigin()
        origin.set("old", .image(payload(3)))
        try await origin.run { (base) async throws in
            let request = ImageRequest(url: base.appendingPathComponent("images/old"))
            let storage = DiskStorage(directory: directory.url, synchronizesWrites: false)
            let file = directory.url.appendingPathComponent(storage.fileName(forKey: request.cacheKey))
            try Data(Self.versionOneEntry(key: request.cacheKey, data: payload(1), contentType: "image/png")).write(to: file)

            let pipeline = pipeline()
            #expect(try await pipeline.imageStored(for: request).data == payload(3))
            let stats = await pipeline.stats()
            #expect(stats.corruptEntries == 0, "an old entry is not damage")
            #expect(stats.diskHits == 0 && stats.originFetches == 1)
            #expect(try pipeline.disk?.read(forKey: request.cacheKey)?.data == payload(3))
        }
    }

    @Test func aHundredConcurrentFirstCallsShareOneSetUpAndLoseNoEntry() async throws {
        // 20 entries from an earlier run, then 100 first calls at once on a fresh pipeline: half
        // set it up, half load new images that are written while set-up may still run.
        let earlier = DiskStorage(directory: directory.url, synchronizesWrites: false)
        try earlier.setUp()
        for key in 0..<20 { try earlier.write(Image(data: payload(key, size: 500), contentType: "image/png"), forKey: "earlier-\(key)") }
        let origin = TestOrigin()
        for key in 0..<50 { origin.set("n\(key)", .image(payload(key, size: 700))) }
        try await origin.run { (base) async throws in
            let pipeline = pipeline()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for call in 0..<100 {
                    group.addTask { () async throws in
                        if call % 2 == 0 {
                            // Writes wait for set-up, so its one scan finds exactly the 20.
                            #expect(try await pipeline.setUp().get().entries == 20)
                        } else {
                            let request = ImageRequest(url: base.appendingPathComponent("images/n\(call / 2)"))
                            #expect(try await pipeline.image(for: request).data == payload(call / 2, size: 700))
                        }
                    }
                }
                try await group.waitForAll()
            }
            await pipeline.writesSettled()  // the answers do not wait for their writes
            let disk = try #require(pipeline.disk)
            #expect(disk.directoryScans == 1)
            #expect(disk.usage.entries == 70)
            #expect(Set(disk.persistedFiles) == Set(directory.fileNames.filter { $0.count == 64 }))
            #expect(directory.fileNames.filter { $0.count == 64 }.count == 70)
        }
    }
}
