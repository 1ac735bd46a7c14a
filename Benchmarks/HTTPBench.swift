import EmojiArtApp
import Foundation
import GalleryServer
import Hummingbird
import ImageCache

/// The servers under wrk, each against nginx serving the same bytes, same settings, same run.
enum HTTPBench {
    static func gallery(seconds: Int) async throws {
        print("## Gallery: GET /gallery/image?N over the 26 served pieces (req/s; target >= 0.9x nginx)\n")
        let gallery = try Server(Bench.emojiart, ["gallery", "--port", "0"], announcing: #"serving (http://[^/\s]+)"#)
        defer { gallery.stop() }
        let root = Bench.work + "/nginx-gallery"
        try FileManager.default.createDirectory(atPath: root + "/pieces", withIntermediateDirectories: true)
        for piece in ArtCatalog.book.served {
            try download(gallery.url + "/gallery/image?\(piece)", to: root + "/pieces/\(piece).png")
        }
        try download(gallery.url + "/gallery/images", to: root + "/feed.json")
        let nginx = try Nginx(root: root, locations: """
            location = /gallery/image { default_type image/png; try_files /pieces/$args.png =404; }
            location = /gallery/images { default_type application/json; try_files /feed.json =404; }
            """)
        defer { nginx.stop() }
        let paths = ArtCatalog.book.served.map { "/gallery/image?\($0)" }
        let ours = try Bench.wrk(gallery.url, paths: paths, seconds: seconds)
        let anchor = try Bench.wrk(nginx.base, paths: paths, seconds: seconds)
        let oursFeed = try Bench.wrk(gallery.url, paths: ["/gallery/images"], seconds: seconds)
        let anchorFeed = try Bench.wrk(nginx.base, paths: ["/gallery/images"], seconds: seconds)
        let bare = try await bareHummingbird(root: root, paths: paths, seconds: seconds)
        Bench.table(["route", "gallery req/s", "nginx req/s", "ratio"], [
            ["/gallery/image?N", Bench.format(ours, 0), Bench.format(anchor, 0), Bench.format(ours / anchor) + "x"],
            ["/gallery/images (feed)", Bench.format(oursFeed, 0), Bench.format(anchorFeed, 0), Bench.format(oursFeed / anchorFeed) + "x"],
            ["bare Hummingbird, same PNGs", Bench.format(bare, 0), Bench.format(anchor, 0), Bench.format(bare / anchor) + "x"],
        ])
    }

    /// The framework's ceiling here: a Hummingbird route that only looks the PNG up in a
    /// dictionary, no metrics, no ETag, no faults.
    static func bareHummingbird(root: String, paths: [String], seconds: Int) async throws -> Double {
        var pieces: [String: ByteBuffer] = [:]
        for piece in ArtCatalog.book.served {
            pieces["\(piece)"] = ByteBuffer(bytes: try Data(contentsOf: URL(fileURLWithPath: root + "/pieces/\(piece).png")))
        }
        let router = Router()
        router.get("gallery/image") { [pieces] request, _ -> Response in
            guard let png = pieces[request.uri.query ?? ""] else { return Response(status: .notFound) }
            return Response(status: .ok, headers: [.contentType: "image/png"], body: .init(byteBuffer: png))
        }
        return try await withLocalServer(router) { port in
            try Bench.wrk("http://127.0.0.1:\(port)", paths: paths, seconds: seconds)
        }
    }

    /// Runs `router` in this process on 127.0.0.1:0 while `body` runs; `body` gets the port.
    static func withLocalServer<T>(_ router: Router<BasicRequestContext>, _ body: (Int) async throws -> T) async throws -> T {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }
        )
        let server = Task { try await app.run() }
        defer { server.cancel() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw BenchError("the local server did not start") }
        return try await body(port)
    }

    static func app(seconds: Int) async throws {
        let gallery = try Server(Bench.emojiart, ["gallery", "--port", "0"], announcing: #"serving (http://[^/\s]+)"#)
        defer { gallery.stop() }
        try await sync(gallery: gallery.url)
        try await staleSync()

        print("## App: GET /thumbs/N on a memory hit (req/s; target >= 0.8x nginx)\n")
        let cache = Bench.work + "/app-cache"
        try? FileManager.default.removeItem(atPath: cache)
        let app = try Server(
            Bench.emojiart, ["app", "--warm-up-budget", "0", "--port", "0", "--gallery", gallery.url, "--cache-dir", cache],
            announcing: #"open (http://[^/\s]+)"#
        )
        defer { app.stop() }
        try await Bench.waitUntilReady(app, within: 60)
        let root = Bench.work + "/nginx-thumbs"
        try FileManager.default.createDirectory(atPath: root + "/thumbs", withIntermediateDirectories: true)
        for piece in ArtCatalog.book.served {
            try download(app.url + "/thumbs/\(piece)", to: root + "/thumbs/\(piece)")  // also warms memory
        }
        let nginx = try Nginx(root: root, locations: "location /thumbs/ { default_type image/png; }")
        defer { nginx.stop() }
        let paths = ArtCatalog.book.served.map { "/thumbs/\($0)" }
        let ours = try Bench.wrk(app.url, paths: paths, seconds: seconds)
        let anchor = try Bench.wrk(nginx.base, paths: paths, seconds: seconds)
        Bench.table(["route", "app req/s", "nginx req/s", "ratio"], [
            ["/thumbs/N (memory hit)", Bench.format(ours, 0), Bench.format(anchor, 0), Bench.format(ours / anchor) + "x"],
        ])
    }

    /// `emojiart sync` cold, then with a warm disk (a new process, same directory), then with a
    /// warm memory (the same process again, through the library).
    static func sync(gallery: String) async throws {
        print("## emojiart sync (wall time; origin image requests from the gallery's /metrics)\n")
        let cache = Bench.work + "/sync-cache"
        try? FileManager.default.removeItem(atPath: cache)
        var rows: [[String]] = []
        for label in ["cold", "warm disk (new process)"] {
            let before = try originRequests(gallery)
            let start = ContinuousClock.now
            _ = try? Bench.run(Bench.emojiart, ["sync", "--gallery", gallery, "--cache-dir", cache])
            let time = start.duration(to: .now)
            let requests = try originRequests(gallery) - before
            rows.append([label, Bench.format(time.milliseconds, 0), "\(requests.total)", "\(requests.served)", "\(requests.notModified)", "\(requests.bytes)"])
        }
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: URL(fileURLWithPath: cache)))
        let model = EmojiArtModel(galleryURL: URL(string: gallery)!, pipeline: pipeline)
        _ = try await Sync(model: model).run()
        let before = try originRequests(gallery)
        let start = ContinuousClock.now
        _ = try await Sync(model: model).run()
        let time = start.duration(to: .now)
        let requests = try originRequests(gallery) - before
        rows.append(["warm memory (same process)", Bench.format(time.milliseconds, 0), "\(requests.total)", "\(requests.served)", "\(requests.notModified)", "\(requests.bytes)"])
        Bench.table(["run", "ms", "image requests", "of served pieces", "answered 304", "body bytes"], rows)
    }

    /// A warm sync where every entry is stale: a gallery sending `max-age=3`, a cold sync, then,
    /// once 3 seconds have passed, a warm one in which each of the 26 pieces costs one
    /// conditional request answered 304 (and the 3 missing ones are asked again). Each sync is a
    /// new process.
    static func staleSync() async throws {
        print("## emojiart sync, every entry stale (gallery --max-age 3; the warm sync starts once 3 s have passed)\n")
        let maxAge = 3
        let gallery = try Server(Bench.emojiart, ["gallery", "--port", "0", "--max-age", "\(maxAge)"], announcing: #"serving (http://[^/\s]+)"#)
        defer { gallery.stop() }
        let cache = Bench.work + "/stale-sync-cache"
        try? FileManager.default.removeItem(atPath: cache)
        var rows: [[String]] = []
        var measured: [(ms: Double, bytes: Int)] = []
        var cold: ContinuousClock.Instant?
        for label in ["cold", "warm, all stale (new process)"] {
            if let cold {
                // Freshness is wall-clock time: the entries go stale when it has passed.
                try await Task.sleep(until: cold.advanced(by: .seconds(maxAge) + .milliseconds(200)))
            }
            let before = try originRequests(gallery.url)
            let start = ContinuousClock.now
            _ = try? Bench.run(Bench.emojiart, ["sync", "--gallery", gallery.url, "--cache-dir", cache])
            let time = start.duration(to: .now)
            if cold == nil { cold = .now }
            let requests = try originRequests(gallery.url) - before
            measured.append((time.milliseconds, requests.bytes))
            rows.append([label, Bench.format(time.milliseconds, 0), "\(requests.total)", "\(requests.notModified)", "\(requests.bytes)"])
        }
        rows.append([
            "warm / cold", Bench.format(measured[1].ms / measured[0].ms) + "x", "", "",
            Bench.format(Double(measured[1].bytes) / Double(max(1, measured[0].bytes))) + "x",
        ])
        Bench.table(["run", "ms", "image requests", "answered 304", "body bytes (feed and images)"], rows)
    }

    struct Requests {
        var total = 0
        var served = 0
        var notModified = 0
        var bytes = 0
        static func - (lhs: Self, rhs: Self) -> Self {
            Requests(
                total: lhs.total - rhs.total, served: lhs.served - rhs.served,
                notModified: lhs.notModified - rhs.notModified, bytes: lhs.bytes - rhs.bytes
            )
        }
    }

    /// Sums the gallery's per-piece image request counters, and reads its 304s and body bytes.
    static func originRequests(_ gallery: String) throws -> Requests {
        let path = Bench.work + "/gallery-metrics.txt"
        try download(gallery + "/metrics", to: path)
        var requests = Requests()
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") where line.hasPrefix("gallery_image_requests_total{") {
            let piece = Int(line.split(separator: "\"")[1]) ?? -1
            let count = Int(Double(line.split(separator: " ").last ?? "") ?? 0)
            requests.total += count
            if !ArtCatalog.book.missing.contains(piece) { requests.served += count }
        }
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let count = Int(Double(line.split(separator: " ").last ?? "") ?? 0)
            if line.hasPrefix(#"gallery_http_requests_total{route="/gallery/image",status="304"}"#) {
                requests.notModified = count
            } else if line.hasPrefix("gallery_bytes_served_total ") {
                requests.bytes = count
            }
        }
        return requests
    }
}
