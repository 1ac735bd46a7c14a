import Foundation

extension ServiceBench {
    /// Warm through `emojiart cluster --tls`'s edge: the service's answers kept by the edge
    /// (nginx `proxy_cache` over TLS, its `/img/` location), against an nginx over TLS whose
    /// `proxy_cache` keeps the same bytes from a plain origin: what the edge's own work costs
    /// beyond nginx's. wrk over HTTP/1.1 with TLS, each side best of 3, in turn.
    static func edgeWarm(origin: String, sources: [String], seconds: Int) throws {
        let work = Bench.work + "/service-edge"
        try? FileManager.default.removeItem(atPath: work)
        try FileManager.default.createDirectory(atPath: work + "/files", withIntermediateDirectories: true)
        let cluster = try Server(
            Bench.emojiart,
            ["cluster", "--tls", "--port", "0", "--instances", "2", "--warm-up-budget", "0", "--work-dir", work + "/cluster",
             "--unsigned", "--allowed-source", origin + "/", "--allow-loopback-sources"],
            announcing: #"cluster: open (https://[^/\s]+)"#
        )
        defer { cluster.stop() }
        // A base64 source: no `%` or `//`, one spelling through the edge.
        let paths = sources.map { "/img/_/rs:fit:300:300/" + base64URL(origin + "/" + $0) }
        for path in paths {
            var kept = false
            for _ in 0..<20 where !kept {
                kept = try curl(cluster.url + path, to: work + "/files" + path.replacingOccurrences(of: "/img/_/rs:fit:300:300", with: "")) == "HIT"
            }
            guard kept else { throw BenchError("the edge does not keep \(path)") }
        }

        // The anchor: the same bytes from files, kept by nginx's proxy_cache behind TLS.
        let plain = try Nginx(root: work + "/files", locations: "location / { default_type image/jpeg; }")
        defer { plain.stop() }
        let (certificate, key) = (work + "/anchor.pem", work + "/anchor.key")
        try run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                                     "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", certificate])
        let tlsPort = Bench.freePort()
        let anchor = try Nginx(root: work + "/files", locations: "", http: """
            proxy_cache_path \(work)/anchor-cache levels=1:2 keys_zone=anchor:10m;
            server {
              listen 127.0.0.1:\(tlsPort) ssl http2;
              ssl_certificate \(certificate);
              ssl_certificate_key \(key);
              ssl_protocols TLSv1.2 TLSv1.3;
              location /img/_/rs:fit:300:300/ {
                proxy_pass http://127.0.0.1:\(plain.port)/;
                proxy_http_version 1.1;
                proxy_set_header Connection "";
                proxy_cache anchor;
                proxy_cache_valid 200 1h;
                add_header X-Cache-Status $upstream_cache_status always;
              }
            }
            """)
        defer { anchor.stop() }
        let anchorBase = "https://127.0.0.1:\(tlsPort)"
        for path in paths {
            var kept = false
            for _ in 0..<20 where !kept { kept = try curl(anchorBase + path, to: nil) == "HIT" }
            guard kept else { throw BenchError("the anchor does not keep \(path)") }
        }
        var edge = 0.0, nginx = 0.0
        for _ in 0..<3 {
            edge = max(edge, try Bench.wrk(cluster.url, paths: paths, seconds: seconds))
            nginx = max(nginx, try Bench.wrk(anchorBase, paths: paths, seconds: seconds))
        }
        Bench.table(["warm through TLS, \(paths.count) kept answers (wrk, 16 connections)", "req/s", "vs nginx proxy_cache"], [
            ["the cluster's edge (its /img/ location)", Bench.format(edge, 0), Bench.format(edge / nginx) + "x"],
            ["nginx proxy_cache over TLS, the same bytes", Bench.format(nginx, 0), "1.00x"],
        ])
        print("Target, warm through the TLS edge: at least 0.9x nginx proxy_cache of the same answers (\(Bench.format(edge / nginx))x).\n")
    }

    /// `curl -k` of `url`, its body written to `path` (or dropped): the `X-Cache-Status` it said.
    private static func curl(_ url: String, to path: String?) throws -> String {
        if let path { try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true) }
        let output = try run("/usr/bin/curl", ["-sk", "-o", path ?? "/dev/null", "-D", "-", url])
        let line = output.split(whereSeparator: \.isNewline).first { $0.lowercased().hasPrefix("x-cache-status:") }
        return line.map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) } ?? ""
    }

    /// Runs a command to its end: what it printed; a failure throws.
    @discardableResult
    private static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("\(executable) \(arguments.joined(separator: " ")) failed") }
        return String(decoding: data, as: UTF8.self)
    }
}
