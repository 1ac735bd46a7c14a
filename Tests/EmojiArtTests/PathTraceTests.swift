import CProfile
@testable import EmojiArtApp
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImageCache
import Testing
import TestSupport

/// One cold thumbnail request, one memory hit and one disk hit, counted: in a build with code coverage, the
/// process's execution counts are zeroed before each request and written after it, so they hold
/// what that request ran. The gallery runs as a process of its own (`emojiart gallery`), so its
/// answering the original's request is not counted with the app's path. scripts/trace
/// (`make trace`) builds with coverage, runs this test alone and prints, for each request, the
/// code regions, lock takes, actor hops and atomic read-modify-writes it ran.
///
/// Each request is sent from a thread of its own with blocking sockets, and that thread zeroes
/// the counts right before it connects and reads them once the server closed the connection and
/// the process has been quiet for 100 ms: the test's own tasks wait outside that window, so its
/// counts are the app's alone (the set-up, and the client, excluded). A window with no request
/// comes first: what runs on its own (timers, work the set-up left) shows there, and should be
/// nothing.
///
/// Runs only under scripts/trace (`EMOJIART_TRACE_DIR` set, in a build with code coverage):
/// elsewhere the counts do not exist. Hops, enqueues and contended mutexes are counted when
/// scripts/trace preloads scripts/trace-hooks.c; they are written to `hooks.json`.
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
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false))
        try await withVerifiedApp(galleryURL: galleryURL, pipeline: pipeline, trust: .firstUse(testTrustStore())) { port, pipeline, _ in
            // Cold: neither piece 7's thumbnail nor its original in memory or on disk.
            await pipeline.clearMemory()
            await pipeline.clear()
            let before = await pipeline.stats()
            var hooks: [String: [String: UInt64]] = [:]
            for name in ["idle", "cold", "hit", "disk"] {
                if name == "disk" {
                    // A disk hit: the thumbnail written after the cold answer, memory emptied.
                    await pipeline.flush()
                    await pipeline.clearMemory()
                }
                let window = try await Self.counted(into: directory + "/\(name).profraw", after: rest) {
                    // No request, for 0.2 s: what runs on its own.
                    if name == "idle" {
                        usleep(200_000)
                        return 200
                    }
                    return try Self.get("/thumbs/7", port: port)
                }
                #expect(window.written == 0, "\(name)")
                #expect(window.status == 200, "\(name)")
                if window.hooks.magic != 0 {
                    hooks[name] = [
                        "task_switches": window.hooks.task_switches, "global_enqueues": window.hooks.global_enqueues,
                        "contended_locks": window.hooks.contended_locks, "allocations": window.hooks.allocations,
                    ]
                }
            }
            try JSONSerialization.data(withJSONObject: hooks, options: [.sortedKeys]).write(to: URL(fileURLWithPath: directory + "/hooks.json"))
            let after = await pipeline.stats()
            // The cold request fetched the original; the second was a memory hit, the third a disk hit.
            #expect(after.originFetches == before.originFetches + 1)
            #expect(after.memoryHits == before.memoryHits + 1)
            #expect(after.diskHits == before.diskHits + 1)
        }
    }

    /// The hop counter counts: 100 calls into an actor from outside it hop there and back, so
    /// `swift_task_switch` is called at least 100 times. Fails if a toolchain stops calling it
    /// where the hooks can see it (then the hops of the report are not to be trusted).
    @Test(.enabled(if: emojiart_trace_hooks_read().magic != 0, "run by scripts/trace, with scripts/trace-hooks.c preloaded"))
    func theHopCounterCountsActorHops() async {
        let counter = HopTarget()
        let before = emojiart_trace_hooks_read().task_switches
        for _ in 0..<100 { await counter.add() }
        let hops = emojiart_trace_hooks_read().task_switches - before
        #expect(hops >= 100)
        #expect(await counter.count == 100)
    }

    /// What one window counted: the body's status, the profile's write (0: written), the hooks.
    struct Window: Sendable {
        var status: Int
        var written: Int32
        var hooks: emojiart_trace_hook_counts
    }

    /// Runs `body` on a thread of its own between zeroing every count and writing the profile to
    /// `path` (then pointing the write at exit to `after`); the test's task waits outside.
    static func counted(into path: String, after: String, _ body: @escaping @Sendable () throws -> Int) async throws -> Window {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                emojiart_profile_reset()
                emojiart_trace_hooks_reset()
                let status = Result { try body() }
                let hooks = settled()
                let written = emojiart_profile_write(path, after)
                continuation.resume(with: status.map { Window(status: $0, written: written, hooks: hooks) })
            }.start()
        }
    }

    /// The hooks' counts once the process has been quiet, no hop and no enqueue, for 100 ms (2 s
    /// at most): what a request leaves to run after the server closed its connection (the
    /// channel's close callbacks, the connection's task ending) is the request's. Without the
    /// hooks, the counts after 100 ms.
    static func settled() -> emojiart_trace_hook_counts {
        var last = emojiart_trace_hooks_read()
        var (quiet, rounds) = (0, 0)
        while quiet < 5, rounds < 100 {
            rounds += 1
            usleep(20_000)
            let now = emojiart_trace_hooks_read()
            if now.task_switches == last.task_switches, now.global_enqueues == last.global_enqueues {
                quiet += 1
            } else {
                (last, quiet) = (now, 0)
            }
        }
        return last
    }

    /// `GET path` on a new connection to 127.0.0.1:`port`, as `RawHTTPConnection.send(_:)` sends
    /// it, with blocking sockets on the calling thread; the answer's status. After the answer it
    /// closes its side and waits for the server to close: the connection's end is the request's.
    static func get(_ path: String, port: Int) throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw RawHTTPError("socket: errno \(errno)") }
        defer { close(socket) }
        var limit = timeval(tv_sec: 60, tv_usec: 0)  // a server that never answers fails the test, not hangs it
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw RawHTTPError("connect to port \(port): errno \(errno)") }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw RawHTTPError("send: errno \(errno)") }
            sent += count
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var status: Int?
        while true {
            if status == nil, let answer = Self.status(ofCompleteAnswer: received) {
                status = answer
                shutdown(socket, Int32(SHUT_WR))
            }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count >= 0 else { throw RawHTTPError("recv: errno \(errno)") }
            if count == 0 { break }
            received += buffer[..<count]
        }
        guard let status else { throw RawHTTPError("the connection closed within an answer: \(received.count) bytes") }
        return status
    }

    /// The status of the answer at the start of `bytes` once it is all there (head and
    /// `Content-Length` bytes of body); `nil` before.
    static func status(ofCompleteAnswer bytes: [UInt8]) -> Int? {
        let separator = Array("\r\n\r\n".utf8)
        guard bytes.count >= 4, let end = (0...(bytes.count - 4)).first(where: { bytes[$0..<($0 + 4)].elementsEqual(separator) }) else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).lowercased().components(separatedBy: "\r\n")
        let length = lines.first { $0.hasPrefix("content-length:") }.flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        guard bytes.count >= end + 4 + length else { return nil }
        return lines[0].split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }
}

/// An actor called from outside it, by ``PathTraceTests/theHopCounterCountsActorHops()``.
private actor HopTarget {
    var count = 0
    func add() { count += 1 }
}
