import CProfile
@testable import EmojiArtApp
import Foundation
import ImageCache
import Testing
import TestSupport

/// One cold thumbnail request and one memory hit, counted: in a build with code coverage, the
/// process's execution counts are zeroed before each request and written after it, so they hold
/// what that request ran. The gallery runs as a process of its own (`emojiart gallery`), so its
/// answering the original's request is not counted with the app's path. scripts/trace
/// (`make trace`) builds with coverage, runs this test alone and prints, for each request, the
/// files, functions, lock takes and memory lookups it ran.
///
/// Runs only under scripts/trace (`EMOJIART_TRACE_DIR` set, in a build with code coverage):
/// elsewhere the counts do not exist.
@Suite(.serialized, .timeLimit(.minutes(3))) struct PathTraceTests {
    static let directory = ProcessInfo.processInfo.environment["EMOJIART_TRACE_DIR"]

    @Test(.enabled(if: directory != nil && emojiart_profile_available() != 0, "run by scripts/trace, in a build with code coverage"))
    func aColdThumbnailAndAMemoryHit() async throws {
        let directory = try #require(Self.directory)
        let rest = directory + "/rest.profraw"
        let data = TemporaryDirectory("emojiart-trace-gallery")
        let gallery = Process()
        gallery.executableURL = URL(fileURLWithPath: CommandLineTests.binary)
        gallery.arguments = ["gallery", "--port", "0"]
        gallery.environment = ProcessInfo.processInfo.environment.merging([
            "VIPS_WARNING": "0", "XDG_DATA_HOME": data.url.path, "LLVM_PROFILE_FILE": directory + "/gallery.profraw",
        ]) { $1 }
        let pipe = Pipe()
        gallery.standardOutput = pipe
        gallery.standardError = FileHandle.nullDevice
        try gallery.run()
        defer {
            gallery.terminate()
            gallery.waitUntilExit()
        }
        let announcement: String = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var text = ""
                while !(text.contains("gallery: serving ") && text.hasSuffix("\n")) {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    text += String(decoding: chunk, as: UTF8.self)
                }
                continuation.resume(returning: text)
            }
        }
        let address = try #require(announcement.range(of: #"serving http://[0-9.]+:[0-9]+"#, options: .regularExpression), "\(announcement)")
        let galleryURL = try #require(URL(string: String(announcement[address].dropFirst("serving ".count))))

        let cache = TemporaryDirectory()
        let database = ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false))
        try await withVerifiedApp(galleryURL: galleryURL, database: database, trust: .firstUse(testTrustStore())) { port, database, _ in
            // Cold: neither piece 7's thumbnail nor its original in memory or on disk.
            await database.clearMemory()
            await database.clear()
            let before = await database.stats()
            for name in ["cold", "hit"] {
                emojiart_profile_reset()
                let status = try await RawHTTPConnection.with(port: port) { connection in
                    try await connection.send(["/thumbs/7"])
                    return try await connection.response()?.status
                }
                #expect(emojiart_profile_write(directory + "/\(name).profraw", rest) == 0)
                #expect(status == 200, "\(name)")
            }
            let after = await database.stats()
            // The cold request fetched the original; the second was a memory hit.
            #expect(after.originFetches == before.originFetches + 1)
            #expect(after.memoryHits == before.memoryHits + 1)
        }
    }
}
