import AsyncHTTPClient
import EmojiArtApp
import Foundation
import GalleryServer
import ImageCache
import NIOCore
import NIOHTTP1

/// What people run instead of us to get cached thumbnails of an origin's images: thumbor (with
/// its HTTP loader and file result storage) and nginx's image filter behind `proxy_cache`; and
/// ours. The same gallery is the origin of all three; each makes a 200x200 fit-in PNG of the 26
/// served pieces.
enum PeersBench {
    static let box = 200

    static func run(seconds: Int) async throws {
        print("## Peers: a \(box)x\(box) fit-in PNG of each of the 26 served pieces, the gallery as origin\n")
        let gallery = try Server(Bench.emojiart, ["gallery", "--port", "0"], announcing: #"serving (http://[^/\s]+)"#)
        defer { gallery.stop() }
        let pieces = ArtCatalog.book.served

        // Ours, cold: the cache library with a fresh directory (nothing fetched before, unlike the
        // app, which verifies every original at start), 8 at a time.
        let directory = Bench.work + "/peers-cache"
        try? FileManager.default.removeItem(atPath: directory)
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: URL(fileURLWithPath: directory), synchronizesWrites: false))
        let thumbnail = ThumbnailProcessor(size: box)
        let origin = gallery.url
        let oursCold = try await cold(pieces) { piece in
            try await pipeline.image(for: ImageRequest(url: URL(string: origin + "/gallery/image?\(piece)")!, processor: thumbnail)).data.count
        }

        let thumbor = try Thumbor(origin: gallery.url)
        defer { thumbor.stop() }
        let thumborPaths = pieces.map { thumbor.path(piece: $0, box: box) }
        let thumborURLs = Dictionary(uniqueKeysWithValues: zip(pieces, thumborPaths.map { thumbor.base + $0 }))
        let thumborCold = try await cold(pieces) { piece in try await get(thumborURLs[piece]!) }

        let nginx = try imageFilterEdge(origin: gallery.url)
        defer { nginx.stop() }
        let nginxPaths = pieces.map { "/thumbs/\($0)" }
        let edge = nginx.base
        let nginxCold = try await cold(pieces) { piece in try await get(edge + "/thumbs/\(piece)") }

        Bench.table(["cold (26 thumbnails, 8 at once)", "total ms", "p50 ms", "p99 ms", "bytes/thumbnail", "filter", "its total / ours"], [
            row("ours (ImagePipeline + libvips, fresh directory)", oursCold, oursCold, "libvips Lanczos-3"),
            row("thumbor 7.8 (HTTP loader, file result storage)", thumborCold, oursCold, "Pillow LANCZOS"),
            row("nginx image_filter + proxy_cache", nginxCold, oursCold, "libgd resampled"),
        ])

        // Warm: every thumbnail made and kept; wrk over the 26 URLs.
        let app = try Server(
            Bench.emojiart, ["app", "--warm-up-budget", "0", "--port", "0", "--gallery", gallery.url, "--cache-dir", Bench.work + "/peers-app-cache"],
            announcing: #"open (http://[^/\s]+)"#
        )
        defer { app.stop() }
        // Verification first, as the other sections wait: before it, /thumbs/N is a 404.
        try await Bench.waitUntilReady(app, within: 120)
        let appPaths = pieces.map { "/thumbs/\($0)" }
        for path in appPaths { _ = try await get(app.url + path) }
        let ours = try Bench.wrk(app.url, paths: appPaths, seconds: seconds)
        let thumborWarm = try Bench.wrk(thumbor.base, paths: thumborPaths, seconds: seconds)
        let nginxWarm = try Bench.wrk(nginx.base, paths: nginxPaths, seconds: seconds)
        // The framework's own ceiling on this machine: a Hummingbird route answering the same
        // thumbnails from a dictionary.
        let root = Bench.work + "/peers-thumbs"
        try FileManager.default.createDirectory(atPath: root + "/pieces", withIntermediateDirectories: true)
        for piece in pieces { try download(app.url + "/thumbs/\(piece)", to: root + "/pieces/\(piece).png") }
        let bare = try await HTTPBench.bareHummingbird(root: root, paths: pieces.map { "/gallery/image?\($0)" }, seconds: seconds)
        // Ours through the edge: `emojiart cluster` (its own gallery, the same art), warmed.
        let (cluster, edgeURL, _, _) = try ClusterBench.start()
        defer { cluster.stop() }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let edgePaths = try await ClusterBench.thumbnailURLs(edgeURL, client: client)
        try await client.shutdown()
        for path in edgePaths { _ = try await get(edgeURL + path) }
        let throughEdge = try Bench.wrk(edgeURL, paths: edgePaths, seconds: seconds)
        Bench.table(["warm (wrk over the 26 URLs)", "req/s", "ours / it"], [
            ["ours: the app's /thumbs/N (memory hit, fast lane)", Bench.format(ours, 0), "1.00x"],
            ["ours through the edge (emojiart cluster, 3 instances)", Bench.format(throughEdge, 0), Bench.format(ours / throughEdge) + "x"],
            ["thumbor (result storage)", Bench.format(thumborWarm, 0), Bench.format(ours / thumborWarm) + "x"],
            ["nginx proxy_cache (image_filter behind it)", Bench.format(nginxWarm, 0), Bench.format(ours / nginxWarm) + "x"],
            ["bare Hummingbird route, same bytes (the framework's ceiling)", Bench.format(bare, 0), Bench.format(ours / bare) + "x"],
        ])
        print("Targets, warm: at least 10x thumbor (\(Bench.format(ours / thumborWarm))x); against nginx's proxy_cache at least "
            + "what the framework allows directly (\(Bench.format(bare / nginxWarm))x: ours \(Bench.format(ours / nginxWarm))x) "
            + "and at least 0.9x through the edge (\(Bench.format(throughEdge / nginxWarm))x).\n")
    }

    /// One cold pass: `fetch` for every piece, 8 at a time; returns each one's latency and size.
    struct Pass {
        var total: Double
        var latencies: [Double]
        var bytes: [Int]
        func percentile(_ p: Double) -> Double {
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
        }
    }

    static func cold(_ pieces: [Int], _ fetch: @escaping @Sendable (Int) async throws -> Int) async throws -> Pass {
        let start = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: (Double, Int).self) { group in
            var queue = pieces.makeIterator()
            var results: [(Double, Int)] = []
            func add() {
                guard let piece = queue.next() else { return }
                group.addTask {
                    let began = ContinuousClock.now
                    let bytes = try await fetch(piece)
                    return (began.duration(to: .now).milliseconds, bytes)
                }
            }
            for _ in 0..<8 { add() }
            for try await result in group {
                results.append(result)
                add()
            }
            return results
        }
        return Pass(total: start.duration(to: .now).milliseconds, latencies: results.map(\.0), bytes: results.map(\.1))
    }

    static func row(_ name: String, _ pass: Pass, _ ours: Pass, _ filter: String) -> [String] {
        [
            name, Bench.format(pass.total, 0), Bench.format(pass.percentile(0.5), 1), Bench.format(pass.percentile(0.99), 1),
            "\(pass.bytes.reduce(0, +) / max(1, pass.bytes.count))", filter, Bench.format(pass.total / ours.total) + "x",
        ]
    }

    /// GETs `url` and returns the body's size; anything but 200 is an error.
    static func get(_ url: String) async throws -> Int {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 10 << 20)
        guard response.status == .ok else { throw BenchError("\(url) answered \(response.status.code)") }
        return body.readableBytes
    }

    /// The classic sysadmin's thumbnail server: an inner server that resizes the proxied original
    /// with `image_filter`, and an outer one that caches its answers with `proxy_cache`.
    static func imageFilterEdge(origin: String) throws -> Nginx {
        let module = "/usr/lib/nginx/modules/ngx_http_image_filter_module.so"
        guard FileManager.default.fileExists(atPath: module) else {
            throw BenchError("nginx's image filter module is missing: run scripts/bootstrap bench")
        }
        let inner = Bench.freePort()
        let cache = Bench.work + "/peers-nginx-cache"
        try? FileManager.default.removeItem(atPath: cache)
        let originAddress = origin.replacingOccurrences(of: "http://", with: "")
        return try Nginx(root: Bench.work, locations: """
            location /thumbs/ {
              proxy_pass http://127.0.0.1:\(inner);
              proxy_cache thumbs;
              proxy_cache_valid 200 1h;
              proxy_cache_lock on;
            }
            """, main: "load_module \(module);", http: """
            proxy_cache_path \(cache) levels=1:2 keys_zone=thumbs:10m max_size=256m inactive=1h use_temp_path=off;
            server {
              listen 127.0.0.1:\(inner);
              location ~ ^/thumbs/(\\d+)$ {
                proxy_pass http://\(originAddress)/gallery/image?$1;
                image_filter resize \(box) \(box);
                image_filter_buffer 20M;
              }
            }
            """)
    }
}

/// thumbor in its own virtual environment (.build-bench/thumbor-venv: it needs Pillow < 13, and
/// the thumbnail table's Pillow anchor stays the current one), with the HTTP loader and the file
/// result storage.
final class Thumbor {
    let port = Bench.freePort()
    private let process = Process()
    let origin: String

    /// Starts thumbor with its HTTP loader and file result storage, and `settings` (more lines
    /// of its configuration, such as DETECTORS) after them.
    init(origin: String, settings: String = "") throws {
        self.origin = origin
        let executable = Bench.work + "/thumbor-venv/bin/thumbor"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchError("thumbor is missing: run make bench (it makes .build-bench/thumbor-venv)")
        }
        let home = Bench.work + "/thumbor-\(port)"
        try? FileManager.default.removeItem(atPath: home)
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try """
        LOADER = 'thumbor.loaders.http_loader'
        STORAGE = 'thumbor.storages.no_storage'
        RESULT_STORAGE = 'thumbor.result_storages.file_storage'
        RESULT_STORAGE_FILE_STORAGE_ROOT_PATH = '\(home)/results'
        RESULT_STORAGE_STORES_UNSAFE = True
        ALLOW_UNSAFE_URL = True
        \(settings)
        """.write(toFile: home + "/thumbor.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--port", "\(port)", "--ip", "127.0.0.1", "--conf", home + "/thumbor.conf", "-l", "error"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // thumbor announces nothing: ask its health check until it answers (60 s at most).
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if (try? download(base + "/healthcheck", to: home + "/health")) != nil { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        stop()
        throw BenchError("thumbor did not answer on port \(port)")
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// The unsafe URL of a fit-in PNG of `piece`.
    func path(piece: Int, box: Int) -> String {
        let source = "\(origin)/gallery/image?\(piece)".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return "/unsafe/fit-in/\(box)x\(box)/filters:format(png)/\(source)"
    }

    /// Stops thumbor: SIGKILL, since its Tornado server ignores SIGTERM; it keeps nothing that
    /// needs flushing.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}
