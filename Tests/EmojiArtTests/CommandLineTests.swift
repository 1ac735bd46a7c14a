import Dispatch
import EmojiArtApp
import Foundation
import ImageCache
import Imaging
import GalleryServer
import Hummingbird
import MessageSignatures
import NIOCore
import Testing
import TestSupport

/// The `emojiart` executable as a person runs it: output, errors and exit statuses.
@Suite struct CommandLineTests {
    static var binary: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("emojiart").path
    }

    struct Outcome {
        let status: Int32
        let output: String
    }

    /// Runs `emojiart ARGUMENTS`. The blocking reads and waits happen on a Dispatch thread: on the
    /// cooperative pool they would starve the in-process gallery the command talks to.
    /// Where the commands keep their trusted gallery keys (and a gallery its signing key): a
    /// directory of this test's own, never the user's.
    let data = TemporaryDirectory("emojiart-data")

    func run(_ arguments: [String], executable: String = Self.binary) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: executable)
                process.arguments = arguments
                // Without LD_LIBRARY_PATH: the binary finds its libvips by itself, as when installed.
                process.environment = ProcessInfo.processInfo.environment.filter { $0.key != "LD_LIBRARY_PATH" }
                    .merging(["VIPS_WARNING": "0", "XDG_DATA_HOME": data.url.path]) { $1 }
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = pipe
                do {
                    try process.run()
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: Outcome(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self)))
            }
        }
    }

    @Test(.enabled(if: getuid() == 0, "nginx's workers are another user only when root starts it"))
    func aClusterWorkDirNginxsWorkersCannotEnterIsRefusedBeforeAnythingStarts() async throws {
        let parent = TemporaryDirectory("emojiart-private")
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: parent.url.path)
        let outcome = try await run(["cluster", "--port", "0", "--work-dir", parent.url.appendingPathComponent("work").path])
        #expect(outcome.status != 0)
        #expect(outcome.output.contains("chmod o+x") && outcome.output.contains(parent.url.path), "\(outcome.output)")
    }

    @Test func syncOverACacheWhoseEveryHeaderIsDamagedDropsThemAndVerifies() async throws {
        let cache = TemporaryDirectory()
        try await withLiveServer({ try await Gallery.buildApplication(.init(port: 0), onServerRunning: $0) }) { port in
            let arguments = ["sync", "--gallery", "http://127.0.0.1:\(port)", "--cache-dir", cache.url.path]
            let first = try await run(arguments)
            #expect(first.status == 0, "\(first.output)")
            let entries = cache.fileNames.filter { $0.count == 64 }
            #expect(entries.count == 56, "26 originals, 26 thumbnails, the feed and the 3 missing pieces' 404s")
            for name in entries {
                // The top byte of the payload length: without a checked length, a trap at start-up.
                let file = cache.url.appendingPathComponent(name)
                var bytes = [UInt8](try Data(contentsOf: file))
                bytes[23] = 0xFF
                try Data(bytes).write(to: file)
            }
            let again = try await run(arguments)
            #expect(again.status == 0, "\(again.output)")
            #expect(again.output.contains("verified        78"))
            #expect(again.output.contains("dropped 56 damaged cache entries"), "\(again.output)")
            #expect(cache.fileNames.filter { $0.count == 64 }.count == 56)
        }
    }

    @Test func trustOnFirstUseThenARotatedKeyIsRefusedUntilTrusted() async throws {
        let cache = TemporaryDirectory()
        let rotated = SigningKey()
        // One gallery before and after it rotated its key: one public origin, two servers.
        let origin = "http://gallery.test:8080"
        func gallery(_ key: SigningKey) -> GalleryConfiguration {
            var configuration = GalleryConfiguration(port: 0, signingKey: key)
            configuration.publicOrigin = origin
            return configuration
        }
        try await withLiveServer({ try await Gallery.buildApplication(gallery(SigningKey()), onServerRunning: $0) }) { first in
            try await withLiveServer({ try await Gallery.buildApplication(gallery(rotated), onServerRunning: $0) }) { second in
                let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:\(first)")!)
                try await proxy.run { proxyURL in
                    let sync = ["sync", "--gallery", proxyURL.absoluteString, "--gallery-origin", origin, "--cache-dir", cache.url.path]
                    let learnt = try await run(sync)
                    #expect(learnt.status == 0, "\(learnt.output)")
                    #expect(learnt.output.contains("first contact with this gallery"))
                    #expect(FileManager.default.fileExists(atPath: data.url.appendingPathComponent("emojiart/trusted-galleries.json").path))

                    proxy.route(to: URL(string: "http://127.0.0.1:\(second)")!)
                    let refused = try await run(sync)
                    #expect(refused.status != 0)
                    // The stored catalog is shown, and said not to be re-authenticated, with why.
                    #expect(refused.output.contains("could not be re-authenticated") && refused.output.contains(rotated.fingerprint))
                    #expect(refused.output.contains("emojiart trust --gallery"))

                    let trust = try await run(["trust", "--gallery", proxyURL.absoluteString, "--key=\(rotated.fingerprint)"])
                    #expect(trust.status == 0, "\(trust.output)")
                    #expect(trust.output.contains("now trusting") && trust.output.contains(rotated.fingerprint))
                    let accepted = try await run(sync)
                    #expect(accepted.status == 0, "\(accepted.output)")
                    #expect(accepted.output.contains("feed key        \(rotated.fingerprint)"))
                }
            }
        }
    }

    /// Rotating the key as documented: `--signing-key` naming a file that does not exist makes a
    /// new private key there (it stopped with "there is no such file"). The port is in use, so the
    /// gallery stops once the key is made.
    @Test func aSigningKeyFileThatDoesNotExistIsMade() async throws {
        let file = data.url.appendingPathComponent("keys/rotated.key")
        try await withLiveServer({ try await Gallery.buildApplication(.init(port: 0), onServerRunning: $0) }) { busy in
            let outcome = try await run(["gallery", "--port", "\(busy)", "--signing-key", file.path])
            #expect(outcome.output.contains("made a new signing key in \(file.path)"), "\(outcome.output)")
            #expect(outcome.status == 1 && outcome.output.contains("port \(busy) is already in use"), "\(outcome.output)")
        }
        let key = try SigningKeyFile.read(file)
        #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int == 0o600)
        #expect(key.fingerprint != testGalleryKey.fingerprint)
    }

    @Test func anUnreadableSigningKeyIsAClearError() async throws {
        let file = data.url.appendingPathComponent("bad.key")
        try Data("-----BEGIN PRIVATE KEY-----\n".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let outcome = try await run(["gallery", "--port", "0", "--signing-key", file.path])
        #expect(outcome.status != 0)
        #expect(outcome.output.contains("base64 of a raw 32-byte Ed25519 private key"), "\(outcome.output)")
    }

    @Test func syncVerifiesEverythingAndExitsZero() async throws {
        let cache = TemporaryDirectory()
        try await withLiveServer({ try await Gallery.buildApplication(.init(port: 0), onServerRunning: $0) }) { port in
            let outcome = try await run(["sync", "--gallery", "http://127.0.0.1:\(port)", "--cache-dir", cache.url.path])
            #expect(outcome.status == 0, "\(outcome.output)")
            #expect(outcome.output.components(separatedBy: "verified 87/87").count == 2, "plain progress lines when not a terminal, the last once:\n\(outcome.output)")
            #expect(outcome.output.contains("verified        78"))
            #expect(outcome.output.contains("missing         9"))
            #expect(outcome.output.contains("thumbnails      26"))
            #expect(outcome.output.contains("origin fetches  29"))

            let warm = try await run(["sync", "--gallery", "http://127.0.0.1:\(port)", "--cache-dir", cache.url.path])
            #expect(warm.status == 0)
            #expect(warm.output.contains("disk hits       52"), "26 originals and 26 thumbnails from disk:\n\(warm.output)")

            let stats = try await run(["cache", "stats", "--cache-dir", cache.url.path])
            #expect(stats.output.contains("entries    56"), "26 originals, 26 thumbnails, the feed and 3 known-missing pieces:\n\(stats.output)")
            let clear = try await run(["cache", "clear", "--cache-dir", cache.url.path])
            #expect(clear.status == 0 && clear.output.contains("cleared 56 entries"))
        }
    }

    /// `cache stats` only reads: it made a missing directory and set a folder's mode to 0700, and
    /// `cache clear --cache-dir /` made `/` 0700 (found by a user's trial). A directory that holds
    /// more than the cache is not cleared or touched, and `--app` with `--cache-dir` is refused
    /// (one was ignored without a word).
    @Test func cacheCommandsLeaveADirectoryThatIsNotTheCachesAlone() async throws {
        let parent = TemporaryDirectory()
        let missing = parent.url.appendingPathComponent("not-yet")
        let none = try await run(["cache", "stats", "--cache-dir", missing.path])
        #expect(none.status == 0 && none.output.contains("not made yet"), "\(none.output)")
        #expect(!FileManager.default.fileExists(atPath: missing.path))
        let cleared = try await run(["cache", "clear", "--cache-dir", missing.path])
        #expect(cleared.status == 0 && cleared.output.contains("nothing to clear"), "\(cleared.output)")
        #expect(!FileManager.default.fileExists(atPath: missing.path))

        let documents = parent.url.appendingPathComponent("documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: false)
        try Data("mine".utf8).write(to: documents.appendingPathComponent("notes.txt"))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: documents.path)
        func mode() throws -> Int { try FileManager.default.attributesOfItem(atPath: documents.path)[.posixPermissions] as? Int ?? 0 }
        let stats = try await run(["cache", "stats", "--cache-dir", documents.path])
        #expect(stats.status == 0 && stats.output.contains("other      1 file or folder the cache did not write"), "\(stats.output)")
        #expect(try mode() == 0o755)
        let clear = try await run(["cache", "clear", "--cache-dir", documents.path])
        #expect(clear.status == 1 && clear.output.contains("give the cache a directory of its own"), "\(clear.output)")
        #expect(try mode() == 0o755, "a directory that is not the cache's alone is not touched")
        #expect(FileManager.default.fileExists(atPath: documents.appendingPathComponent("notes.txt").path))

        for command in ["stats", "clear"] {
            let both = try await run(["cache", command, "--app", "http://127.0.0.1:8080", "--cache-dir", documents.path])
            #expect(both.status != 0 && both.output.contains("pass one or the other"), "\(both.output)")
        }
    }

    /// Not from a browser (no Origin, no Sec-Fetch-Site): the app's cross-site rule lets it through.
    @Test func cacheClearWithAppClearsARunningApp() async throws {
        try await withVerifiedApp { port, pipeline, _ in
            let before = await pipeline.stats()
            #expect(before.memoryEntries > 0 && before.diskEntries > 0)
            let outcome = try await run(["cache", "clear", "--app", "http://127.0.0.1:\(port)"])
            #expect(outcome.status == 0, "\(outcome.output)")
            #expect(outcome.output.contains("cleared memory cache") && outcome.output.contains("cleared disk cache"), "\(outcome.output)")
            let after = await pipeline.stats()
            #expect(after.memoryEntries == 0 && after.diskEntries == 0, "\(after.memoryEntries) in memory, \(after.diskEntries) on disk")
        }
    }

    /// Whatever answers at `--app` reaches the terminal printable: escapes that set the window's
    /// title and clear the screen were printed raw (attacker round 4).
    @Test func cacheStatsWithAppPrintsOnlyPrintableText() async throws {
        let router = Router()
        router.get("stats") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"],
                     body: .init(byteBuffer: ByteBuffer(string: "\u{1B}]0;pwned\u{07}\u{1B}[2J{\"memoryHits\": 1}\nnext line")))
        }
        try await withLiveServer({ onRunning in
            Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), onServerRunning: { await onRunning($0.localAddress?.port ?? 0) })
        }) { port in
            let outcome = try await run(["cache", "stats", "--app", "http://127.0.0.1:\(port)"])
            #expect(outcome.status == 0, "\(outcome.output)")
            #expect(!outcome.output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(outcome.output)")
            #expect(outcome.output.contains("\u{FFFD}]0;pwned\u{FFFD}\u{FFFD}[2J{\"memoryHits\": 1}\nnext line"), "\(outcome.output)")
        }
    }

    /// `--app` names a running app: another server's answer is not taken for the app's. A 200 to a
    /// clear (any server's page) said "cleared" and a 404 page was printed as counters.
    @Test func cacheCommandsWithAppTakeOnlyTheAppsAnswers() async throws {
        let router = Router()
        router.post("cache/clear-memory") { _, _ in "ok" }
        router.post("cache/clear-disk") { _, _ in Response(status: .tooManyRequests) }
        try await withLiveServer({ onRunning in
            Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), onServerRunning: { await onRunning($0.localAddress?.port ?? 0) })
        }) { port in
            let app = "http://127.0.0.1:\(port)"
            for (flag, said) in [("--memory", "answered 200, not as an EmojiArt app does (303)"), ("--disk", "answered 429: an edge in front limits")] {
                let clear = try await run(["cache", "clear", flag, "--app", app])
                #expect(clear.status != 0, "\(clear.output)")
                #expect(clear.output.contains(said) && !clear.output.contains(" cache of "), "\(clear.output)")
            }
            let stats = try await run(["cache", "stats", "--app", "HTTP://127.0.0.1:\(port)/"])
            #expect(stats.status != 0)
            #expect(stats.output.contains("/stats answered 404"), "\(stats.output)")
        }
        for url in ["127.0.0.1:8080", "ftp://127.0.0.1", "http://127.0.0.1:8080/stats", "http://127.0.0.1:8080/?x=1", "http://u@127.0.0.1",
                    "http://127.0.0.1:8080/%2F", "http://127.0.0.1:99999", "http://:8080"] {
            let outcome = try await run(["cache", "stats", "--app", url])
            #expect(outcome.status != 0 && outcome.output.contains("--app must be a running app's address"), "\(url): \(outcome.output)")
        }
    }

    // A time limit, should a command not stop: were a name not refused, each would stop on the
    // busy port instead, with another message.
    @Test(.timeLimit(.minutes(3))) func allowedHostIsAnOptionOfTheAppAndTheDefaultCommand() async throws {
        for command in [["app"], ["serve"]] {
            let help = try await run(command + ["--help"])
            #expect(help.output.contains("--allowed-host <name>"), "\(help.output)")
        }
        // A port in use: were a name not refused, the command would stop there rather than serve.
        try await withLiveServer({ try await Gallery.buildApplication(.init(port: 0), onServerRunning: $0) }) { busy in
            for name in ["http://emojiart.example", "emojiart.example:8080", "a/b"] {
                let app = try await run(["app", "--gallery", "http://127.0.0.1:9", "--port", "\(busy)", "--allowed-host", name])
                #expect(app.status != 0)
                #expect(app.output.contains("--allowed-host takes a host name"), "\(app.output)")
                let serve = try await run(["--port", "\(busy)", "--allowed-host", "emojiart.example", "--allowed-host", name])
                #expect(serve.status != 0)
                #expect(serve.output.contains("--allowed-host takes a host name"), "\(serve.output)")
            }
        }
    }

    @Test func syncExitsNonZeroOnMismatch() async throws {
        let cache = TemporaryDirectory()
        let faults = FaultInjection(corruptRate: 0.5, seed: 3)
        try await withLiveServer({ try await Gallery.buildApplication(.init(port: 0, faults: faults), onServerRunning: $0) }) { port in
            let outcome = try await run(["sync", "--gallery", "http://127.0.0.1:\(port)", "--cache-dir", cache.url.path])
            #expect(outcome.status == 1)
            #expect(outcome.output.contains("does not match the gallery's checksum"))
        }
    }

    @Test func syncAgainstADeadGallerySaysWhatToDo() async throws {
        let cache = TemporaryDirectory()
        let closed = try ClosedPort()
        let outcome = try await run(["sync", "--gallery", closed.url, "--cache-dir", cache.url.path])
        #expect(outcome.status != 0)
        #expect(outcome.output.contains("not answering with its feed (connection refused: nothing listens at that address and port)")
            && outcome.output.contains("emojiart gallery"), "\(outcome.output)")
        // The cache commands say the same of a running app that is not running.
        for command in [["cache", "stats"], ["cache", "clear"]] {
            let app = try await run(command + ["--app", closed.url])
            #expect(app.status != 0)
            #expect(app.output.contains("\(closed.url) is not answering (connection refused: nothing listens at that address and port)"), "\(app.output)")
        }
    }

    @Test func thumbnailCommandWritesAThumbnailAndRefusesBadInput() async throws {
        let directory = TemporaryDirectory()
        let art = directory.url.appendingPathComponent("art.png")
        try Data(try await ArtStore.load().pieces[3].png.readableBytesView).write(to: art)
        let output = directory.url.appendingPathComponent("thumb.webp")
        let good = try await run(["thumbnail", art.path, "-o", output.path, "--size", "100", "--format", "webp"])
        #expect(good.status == 0)
        #expect(good.output.contains("55x100 image/webp"))
        #expect(FileManager.default.fileExists(atPath: output.path))

        let html = directory.url.appendingPathComponent("page.png")
        try Data("<html><body>502 Bad Gateway</body></html>".utf8).write(to: html)
        let bad = try await run(["thumbnail", html.path, "-o", output.path])
        #expect(bad.status != 0)
        #expect(bad.output.contains("HTML error page"))

        // The format is the one the output's name says (vipsthumbnail's rule); a --format that
        // contradicts it is refused rather than writing a PNG named .jpg.
        let named = directory.url.appendingPathComponent("thumb.jpg")
        let byName = try await run(["thumbnail", art.path, "-o", named.path, "--size", "100"])
        #expect(byName.status == 0 && byName.output.contains("55x100 image/jpeg"), "\(byName.output)")
        #expect(try Imaging().probe([UInt8](Data(contentsOf: named))).format == .jpeg)
        let contradicted = try await run(["thumbnail", art.path, "-o", named.path, "--format", "png"])
        #expect(contradicted.status == 64 && contradicted.output.contains("names jpeg, but --format says png"), "\(contradicted.output)")

        // What cannot be read says why, in words, with the failure's status (not a usage error).
        let missing = try await run(["thumbnail", directory.url.appendingPathComponent("nope.png").path, "-o", output.path])
        #expect(missing.status == 1 && missing.output.contains("cannot read") && missing.output.contains("there is no such file"), "\(missing.output)")
        let folder = try await run(["thumbnail", directory.url.path, "-o", output.path])
        #expect(folder.status == 1 && folder.output.contains("it is a folder, not an image"), "\(folder.output)")
        // A pipe with no writer: opening it to read would wait forever (this test would hang).
        let pipe = directory.url.appendingPathComponent("pipe.png").path
        #expect(mkfifo(pipe, 0o600) == 0)
        let fromPipe = try await run(["thumbnail", pipe, "-o", output.path])
        #expect(fromPipe.status == 1 && fromPipe.output.contains("not a regular file"), "\(fromPipe.output)")
        let gif = try await run(["thumbnail", art.path, "-o", directory.url.appendingPathComponent("t.gif").path])
        #expect(gif.status == 64 && gif.output.contains("written as .png, .webp or .jpg files, not .gif"), "\(gif.output)")
        let nowhere = try await run(["thumbnail", art.path, "-o", directory.url.appendingPathComponent("no-such-folder/t.png").path])
        #expect(nowhere.status == 1 && nowhere.output.contains("there is no folder"), "\(nowhere.output)")
        // A limit the message names can be raised from the command line.
        let tooWide = try await run(["thumbnail", art.path, "-o", output.path, "--max-side", "100"])
        #expect(tooWide.status == 1 && tooWide.output.contains("raise the side limit (emojiart thumbnail --max-side)"), "\(tooWide.output)")
        let tooBig = try await run(["thumbnail", art.path, "-o", output.path, "--max-bytes", "100"])
        #expect(tooBig.status == 1 && tooBig.output.contains("over the limit of 100"), "\(tooBig.output)")
        // A 1 TiB file (sparse: it takes no disk) is refused by its size, not read into memory.
        let huge = directory.url.appendingPathComponent("huge.png").path
        #expect(FileManager.default.createFile(atPath: huge, contents: nil) && truncate(huge, 1 << 40) == 0)
        let fromHuge = try await run(["thumbnail", huge, "-o", output.path])
        #expect(fromHuge.status == 1 && fromHuge.output.contains("the image is 1099511627776 bytes, over the limit"), "\(fromHuge.output)")

        // A failure's message shows control characters, never sends them to the terminal.
        let escaping = try await run(["thumbnail", directory.url.appendingPathComponent("\u{1B}]0;owned\u{07}.png").path, "-o", output.path])
        #expect(escaping.status != 0 && escaping.output.contains("\u{FFFD}]0;owned\u{FFFD}.png"), "\(escaping.output)")
        #expect(!escaping.output.contains("\u{1B}") && !escaping.output.contains("\u{07}"))

        let badSize = try await run(["thumbnail", art.path, "-o", output.path, "--size", "0"])
        #expect(badSize.status != 0 && badSize.output.contains("--size"))
    }

    /// The executable, run as a person runs it, says which libvips it runs on: the one its test
    /// process loaded (the pinned build unless built with VIPS=system), and whether SIMD is on.
    @Test func versionNamesTheLibvipsTheBinaryRunsOn() async throws {
        let expected = "libvips \(Imaging.libvipsVersion), SIMD \(Imaging.isVectorised ? "on" : "off")"
        for arguments in [["thumbnail", "--version"], ["--version"]] {
            let outcome = try await run(arguments)
            #expect(outcome.status == 0 && outcome.output == "emojiart on \(expected)\n", "\(arguments): \(outcome.output)")
        }
        let help = try await run(["thumbnail", "--help"]).output.replacingOccurrences(of: "\n", with: " ")
        #expect(help.contains("Runs on libvips \(Imaging.libvipsVersion)"), "\(help)")
    }

    /// An installed binary (deploy/systemd runs /usr/local/bin/emojiart) finds libvips without
    /// the clone: a copy elsewhere, run without LD_LIBRARY_PATH, runs on the same libvips, its run
    /// path names no folder of the clone, and the dynamic loader finds libvips outside the clone.
    @Test func aCopyOutsideTheCloneRunsOnTheSameLibvips() async throws {
        let clone = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
        let directory = TemporaryDirectory("emojiart-installed")
        let copy = directory.url.appendingPathComponent("emojiart")
        try FileManager.default.copyItem(atPath: Self.binary, toPath: copy.path)
        let outcome = try await run(["--version"], executable: copy.path)
        #expect(outcome.status == 0 && outcome.output.contains("libvips \(Imaging.libvipsVersion)"), "\(outcome.output)")

        let dynamic = try await run(["-d", copy.path], executable: "/usr/bin/readelf")
        #expect(dynamic.status == 0 && dynamic.output.contains("(NEEDED)"), "\(dynamic.output)")
        let runPaths = dynamic.output.split(separator: "\n").filter { $0.contains("RPATH") || $0.contains("RUNPATH") }
        #expect(!runPaths.contains { $0.contains(clone) }, "the run path names the clone: \(runPaths)")

        let resolved = try await run([copy.path], executable: "/usr/bin/ldd")
        let libvips = resolved.output.split(separator: "\n").filter { $0.contains("libvips") }
        #expect(libvips.count == 1 && libvips.allSatisfy { $0.contains("=> /") && !$0.contains(clone) }, "\(resolved.output)")
    }
}
