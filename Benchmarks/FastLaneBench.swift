import Foundation
import GalleryServer

/// Warm images from memory with the fast lane on and off, against nginx serving the same bytes
/// from files and a minimal SwiftNIO server answering them from a dictionary (the Swift limit),
/// unpinned with the bench's usual wrk settings and pinned (server on CPU 0, wrk on CPU 1), with
/// the server's CPU time per request.
enum FastLaneBench {
    static func run(seconds: Int) async throws {
        print("## Fast lane: warm images from memory, lane on and off, against nginx and a raw SwiftNIO server\n")
        let gallery = try Server(Bench.emojiart, ["gallery", "--port", "0"], announcing: #"serving (http://[^/\s]+)"#)
        defer { gallery.stop() }
        let galleryOff = try Server(Bench.emojiart, ["gallery", "--port", "0", "--no-fast-lane"], announcing: #"serving (http://[^/\s]+)"#)
        defer { galleryOff.stop() }
        func app(_ name: String, _ flags: [String]) throws -> Server {
            let cache = Bench.work + "/lane-\(name)-cache"
            try? FileManager.default.removeItem(atPath: cache)
            return try Server(
                Bench.emojiart, ["app", "--warm-up-budget", "0", "--port", "0", "--gallery", gallery.url, "--cache-dir", cache] + flags,
                announcing: #"open (http://[^/\s]+)"#
            )
        }
        let appOn = try app("on", [])
        defer { appOn.stop() }
        let appOff = try app("off", ["--no-fast-lane"])
        defer { appOff.stop() }
        try await Bench.waitUntilReady(appOn, within: 60)
        try await Bench.waitUntilReady(appOff, within: 60)

        // The same bytes as files: for nginx (`pieces/N.png`, `thumbs/N`) and for the raw NIO
        // server (named by their paths: `gallery/image?N`, `thumbs/N`). Fetching them warms memory.
        let root = Bench.work + "/lane-nginx"
        let rawRoot = Bench.work + "/lane-raw"
        for directory in [root + "/pieces", root + "/thumbs", rawRoot + "/gallery", rawRoot + "/thumbs"] {
            try? FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let galleryPaths = ArtCatalog.book.served.map { "/gallery/image?\($0)" }
        let thumbnailPaths = ArtCatalog.book.served.map { "/thumbs/\($0)" }
        for piece in ArtCatalog.book.served {
            try download(gallery.url + "/gallery/image?\(piece)", to: root + "/pieces/\(piece).png")
            let galleryFile = rawRoot + "/gallery/image?\(piece)"
            try download(galleryOff.url + "/gallery/image?\(piece)", to: galleryFile, fieldsTo: galleryFile + ".fields")
            try download(appOn.url + "/thumbs/\(piece)", to: root + "/thumbs/\(piece)")
            let thumbnailFile = rawRoot + "/thumbs/\(piece)"
            try download(appOff.url + "/thumbs/\(piece)", to: thumbnailFile, fieldsTo: thumbnailFile + ".fields")
        }
        let nginx = try Nginx(root: root, locations: """
            location = /gallery/image { default_type image/png; try_files /pieces/$args.png =404; }
            location /thumbs/ { default_type image/png; }
            """)
        defer { nginx.stop() }
        let raw = try Server(Bench.benchBinary, ["--serve-raw-nio", rawRoot], announcing: #"raw-nio: (http://\S+)"#)
        defer { raw.stop() }

        for (route, paths, on, off) in [
            ("gallery GET /gallery/image?N (26 pieces)", galleryPaths, gallery, galleryOff),
            ("app GET /thumbs/N, memory hit (26 pieces)", thumbnailPaths, appOn, appOff),
        ] {
            // (name, base URL, paths, processes). The raw server twice: with two fields, and with the
            // route's own fields (the same answer byte for byte but `Date`) under /full.
            let servers: [(String, String, [String], [Int32])] = [
                ("lane on", on.url, paths, Pinning.processTree(on.process.processIdentifier)),
                ("lane off (Hummingbird alone)", off.url, paths, Pinning.processTree(off.process.processIdentifier)),
                ("raw SwiftNIO, same bytes, 2 fields", raw.url, paths, Pinning.processTree(raw.process.processIdentifier)),
                ("raw SwiftNIO, the route's answer", raw.url, paths.map { "/full" + $0 }, Pinning.processTree(raw.process.processIdentifier)),
                ("nginx, same bytes from files", nginx.base, paths, Pinning.processTree(nginx.pid)),
            ]
            // Each server three times, in turn; each keeps its best run of each kind (a neighbour on
            // this shared machine slows a run, never speeds one up).
            var unpinned = [Double](repeating: 0, count: servers.count)
            var pinned = [Pinning.Measurement](repeating: .init(requestsPerSecond: 0, microsecondsPerRequest: .infinity), count: servers.count)
            for _ in 0..<3 {
                for (index, server) in servers.enumerated() {
                    unpinned[index] = max(unpinned[index], try Bench.wrk(server.1, paths: server.2, seconds: seconds))
                    let measured = try Pinning.measure(server.1, paths: server.2, server: server.3, seconds: seconds)
                    Pinning.unpin(server.3)
                    pinned[index].requestsPerSecond = max(pinned[index].requestsPerSecond, measured.requestsPerSecond)
                    pinned[index].microsecondsPerRequest = min(pinned[index].microsecondsPerRequest, measured.microsecondsPerRequest)
                }
            }
            let rawIndex = 2
            Bench.table([route, "req/s", "vs raw NIO", "pinned req/s", "vs raw NIO", "server CPU per request", "vs raw NIO"], servers.indices.map { index in
                [
                    servers[index].0,
                    Bench.format(unpinned[index], 0), Bench.format(unpinned[index] / unpinned[rawIndex]) + "x",
                    Bench.format(pinned[index].requestsPerSecond, 0), Bench.format(pinned[index].requestsPerSecond / pinned[rawIndex].requestsPerSecond) + "x",
                    Bench.format(pinned[index].microsecondsPerRequest, 1) + " us",
                    Bench.format(pinned[rawIndex].microsecondsPerRequest / pinned[index].microsecondsPerRequest) + "x",
                ]
            })
            func ratios(_ anchor: Int) -> String {
                "\(Bench.format(unpinned[0] / unpinned[anchor]))x unpinned, "
                    + "\(Bench.format(pinned[0].requestsPerSecond / pinned[anchor].requestsPerSecond))x pinned, "
                    + "\(Bench.format(pinned[anchor].microsecondsPerRequest / pinned[0].microsecondsPerRequest))x by CPU per request"
            }
            print("Target: lane on >= 0.9x raw SwiftNIO. Against raw NIO with two fields: \(ratios(rawIndex)); "
                + "against raw NIO sending the route's own answer: \(ratios(rawIndex + 1)); "
                + "lane on vs off: \(Bench.format(pinned[0].requestsPerSecond / pinned[1].requestsPerSecond))x pinned.\n")
        }
    }
}
