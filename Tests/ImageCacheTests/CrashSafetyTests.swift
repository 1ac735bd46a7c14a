import Foundation
import ImageCache
import Testing
import TestSupport

/// A child process writes entries as fast as it can and is killed with SIGKILL at random
/// moments; after each kill the cache is reopened and every entry checked.
@Suite(.timeLimit(.minutes(5))) struct CrashSafetyTests {
    static var writerPath: String {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("imagecache-crash-writer").path
    }

    @Test func killedWritersNeverLeaveACorruptEntry() async throws {
        let directory = TemporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        var survivors = 0
        for cycle in 0..<20 {
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: Self.writerPath)
            writer.arguments = [directory.url.path, "\(cycle * 1_000_000)"]
            let output = Pipe()
            writer.standardOutput = output
            try writer.run()
            // Wait for "ready", then let it write for a random while. Meanwhile read as a
            // second process would, checking every entry it finds.
            _ = output.fileHandleForReading.availableData
            let reader = DiskStorage(directory: directory.url, sizeLimit: 4 * 1024 * 1024, synchronizesWrites: false)
            let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int.random(in: 20...250, using: &generator)))
            while ContinuousClock.now < deadline {
                for key in 0..<64 { try Self.check(try reader.read(forKey: "k\(key)"), key: key) }
                await Task.yield()  // leave the cooperative pool to other tests
            }
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
            #expect(writer.terminationReason == .uncaughtSignal)

            let reopened = DiskStorage(directory: directory.url, sizeLimit: 4 * 1024 * 1024)
            let report = try reopened.setUp()  // a start-up failure throws and fails the test
            #expect(!directory.fileNames.contains { $0.hasPrefix(".tmp-") }, "cycle \(cycle): a temporary file survived setUp")
            for key in 0..<64 {
                let image = try reopened.read(forKey: "k\(key)")  // a corrupt entry throws
                try Self.check(image, key: key)
                if image != nil { survivors += 1 }
            }
            _ = report
        }
        #expect(survivors > 0, "the writer never completed an entry: the test proved nothing")
    }

    /// An entry's payload starts with "k<key> <generation> <size>|" followed by `size` bytes.
    static func check(_ image: Image?, key: Int) throws {
        guard let image else { return }
        let bar = try #require(image.data.firstIndex(of: UInt8(ascii: "|")))
        let header = String(decoding: image.data[..<bar], as: UTF8.self).split(separator: " ")
        #expect(header.count == 3 && header[0] == "k\(key)")
        let size = Int(header[2]) ?? -1
        #expect(image.data.count == bar + 1 + size)
        let generation = UInt8(truncatingIfNeeded: UInt64(header[1]) ?? 0)
        #expect(image.data[(bar + 1)...].allSatisfy { $0 == generation })
    }
}
