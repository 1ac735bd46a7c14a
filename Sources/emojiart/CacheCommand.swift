import ArgumentParser
import AsyncHTTPClient
import EmojiArtApp
import Foundation
import ImageCache
import NIOCore
import NIOHTTP1

/// `emojiart cache`: look at or clear the cache.
struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Show or clear the image cache.",
        subcommands: [Stats.self, Clear.self]
    )

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the disk cache's entries and size, or a running app's counters with --app."
        )

        @OptionGroup var cache: CacheOptions

        @Option(help: "A running app's URL, e.g. http://127.0.0.1:8080: show its live counters.")
        var app: String?

        func validate() throws {
            if let app { _ = try CacheCommand.appBase(app) }
            try CacheCommand.checkOneCache(app: app, cache: cache)
        }

        func run() async throws {
            if let app = try app.map(CacheCommand.appBase) {
                let deadline = ContinuousClock.now + CacheCommand.appTimeout
                let response = try await CacheCommand.ask(HTTPImageFetcher.defaultClient, HTTPClientRequest(url: app + "/stats"), app: app)
                let type = response.headers.first(name: "content-type") ?? "none"
                guard response.status.code == 200, type.hasPrefix("application/json") else {
                    throw CommandFailure("\(app)/stats answered \(response.status.code) with content type \(TerminalText.printable(type)), "
                        + "not an EmojiArt app's counters (200, JSON): give the address the app prints when it starts")
                }
                let body = try await response.body.collect(upTo: 1 << 20, by: deadline)
                // Another server may answer at that URL: its bytes reach the terminal printable.
                print(TerminalText.printable(String(buffer: body), keepingNewlines: true))
                return
            }
            // Read only: nothing is created, tightened, deleted or evicted (the app's set-up does that).
            let survey = try CacheCommand.survey(cache.directory)
            print("directory  \(cache.directory.path)\(survey.exists ? "" : " (not made yet: nothing is cached)")")
            print("entries    \(survey.entries)")
            print("bytes      \(survey.bytes)")
            if survey.linkedEntries > 0 { print("linked     \(survey.linkedEntries) entries with a second name (hard links)") }
            if survey.temporaryFiles > 0 {
                print("temporary  \(survey.temporaryFiles) files: writes under way, or left by a killed writer (those the app removes when it next starts)")
            }
            if survey.otherFiles > 0 {
                let others = survey.otherFiles == 1 ? "1 file or folder" : "\(survey.otherFiles) files or folders"
                print("other      \(others) the cache did not write: the cache does not use this directory (give it one of its own)")
            } else if survey.exists, survey.mode & 0o077 != 0 {
                print("mode       \(String(survey.mode, radix: 8)): others may read the cache (the app makes it 700 when it next starts)")
            }
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Clear the disk cache, or a running app's memory and/or disk cache with --app.",
            discussion: "Without --memory or --disk, clears both. The memory cache lives in a running app, so --memory needs --app."
        )

        @OptionGroup var cache: CacheOptions

        @Flag(help: "Clear the memory cache (of the app given with --app).")
        var memory = false

        @Flag(help: "Clear the disk cache.")
        var disk = false

        @Option(help: "A running app's URL, e.g. http://127.0.0.1:8080.")
        var app: String?

        func validate() throws {
            if memory, app == nil {
                throw ValidationError("the memory cache lives in a running app: pass --app URL with --memory")
            }
            if let app { _ = try CacheCommand.appBase(app) }
            try CacheCommand.checkOneCache(app: app, cache: cache)
        }

        func run() async throws {
            let (clearMemory, clearDisk) = memory || disk ? (memory, disk) : (app != nil, true)
            if let app = try app.map(CacheCommand.appBase) {
                // The app answers 303 back to a page: that is the answer; following it would
                // render the catalog (and start its prefetches) for nothing.
                var configuration = HTTPImageFetcher.clientConfiguration
                configuration.redirectConfiguration = .disallow
                let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
                defer { _ = client.shutdown() }
                for (wanted, path) in [(clearMemory, "/cache/clear-memory"), (clearDisk, "/cache/clear-disk")] where wanted {
                    var request = HTTPClientRequest(url: app + path)
                    request.method = .POST
                    let response = try await CacheCommand.ask(client, request, app: app)
                    guard response.status.code != 421 else {
                        throw CommandFailure("\(app) does not answer to that host name (421): use the address it prints, or start it with --allowed-host NAME")
                    }
                    guard response.status.code != 429 else {
                        throw CommandFailure("\(app)\(path) answered 429: an edge in front limits the caches' actions per client; wait a few seconds, or ask an instance at its own address")
                    }
                    guard response.status.code < 500 else {
                        throw CommandFailure("\(app)\(path) failed (\(response.status.code)): see the app's log; the cache may not be cleared")
                    }
                    // The app answers a clear with 303 (back to the page): any other answer is not
                    // the app's, and nothing is known to be cleared.
                    guard response.status.code == 303 else {
                        throw CommandFailure("\(app)\(path) answered \(response.status.code), not as an EmojiArt app does (303): "
                            + "nothing is known to be cleared; give the address the app prints when it starts")
                    }
                    print("cleared \(path == "/cache/clear-memory" ? "memory" : "disk") cache of \(app)")
                }
                return
            }
            guard try CacheCommand.survey(cache.directory).exists else {
                print("nothing to clear: \(cache.directory.path) does not exist")
                return
            }
            let pipeline = cache.pipeline()
            if case let .failure(error) = await pipeline.setUp() { throw CommandFailure("\(error)") }
            let before = pipeline.disk?.usage ?? (entries: 0, bytes: 0)
            await pipeline.clear()
            print("cleared \(before.entries) entries (\(before.bytes) bytes) from \(cache.directory.path)")
        }
    }

    /// How long `--app` waits for a running app's whole answer: a local app answers in
    /// milliseconds, but a machine busy with other work (a build, a test run) may take seconds.
    static let appTimeout: Duration = .seconds(15)

    /// `request` to the app at `app`, within ``appTimeout``; no answer is a failure that says why in words.
    static func ask(_ client: HTTPClient, _ request: HTTPClientRequest, app: String) async throws -> HTTPClientResponse {
        do {
            return try await client.execute(request, timeout: .seconds(Int64(appTimeout.components.seconds)))
        } catch {
            throw CommandFailure("\(app) is not answering (\(HTTPImageFetcher.describe(error))): is the app running there? Give the address it prints when it starts")
        }
    }

    /// What the cache directory holds, read without changing anything.
    static func survey(_ directory: URL) throws -> DiskStorage.Survey {
        do {
            return try DiskStorage(directory: directory, synchronizesWrites: false).survey()
        } catch {
            guard case let .diskFailure(path, reason) = error else { throw CommandFailure("\(error)") }
            throw CommandFailure("\(reason) (\(path)): pass --cache-dir a directory the cache may use")
        }
    }

    /// `--app` and `--cache-dir` name two different caches (a running app's, and one on this
    /// machine): given both, one would be ignored without a word.
    static func checkOneCache(app: String?, cache: CacheOptions) throws {
        if app != nil, cache.cacheDir != nil {
            throw ValidationError("--app asks a running app about its own cache, and --cache-dir names a cache on this machine: pass one or the other")
        }
    }

    /// A running app's base URL from `--app`: `http` or `https` (any case), a host, a port in
    /// 1...65535 if one is given, and no path (a trailing `/` is dropped), query, fragment or
    /// user. The routes are appended to it.
    static func appBase(_ text: String) throws -> String {
        guard let parts = URLComponents(string: text), let scheme = parts.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = parts.percentEncodedHost, !host.isEmpty, parts.port.map({ (1...65_535).contains($0) }) ?? true,
              parts.percentEncodedPath.isEmpty || parts.percentEncodedPath == "/",
              parts.percentEncodedQuery == nil, parts.percentEncodedFragment == nil, parts.user == nil, parts.password == nil
        else {
            throw ValidationError("--app must be a running app's address, e.g. http://127.0.0.1:8080 (http or https, no path), got '\(TerminalText.printable(text))'")
        }
        return parts.percentEncodedPath == "/" ? String(text.dropLast()) : text
    }
}
