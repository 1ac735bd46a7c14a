@testable import EmojiArtApp
import FastLane
import Foundation
import Hummingbird
import ImageCache
import Testing
import TestSupport

/// What a web page in the same browser can do to the app, asked of a real app server (fast lane
/// on) over raw connections, field by field as a browser would send them: state-changing requests
/// only from the app's own pages, only the app's host names, a `back()` that stays home, and the
/// headers that tell the browser to sniff nothing, run no inline script and frame nothing.
@Suite(.timeLimit(.minutes(3))) struct BrowserBoundaryTests {
    struct Server {
        let port: Int
        let pipeline: ImagePipeline
        let metrics: AppMetrics
    }

    /// An app bound to 127.0.0.1 with `emojiart.example` and `::1` allowed, verified and serving.
    func withServer(_ body: (Server) async throws -> Void) async throws {
        try await withVerifiedApp(allowedHosts: ["emojiart.example", "::1"]) { port, pipeline, services in
            try await body(Server(port: port, pipeline: pipeline, metrics: services.metrics))
        }
    }

    func ask(_ port: Int, _ path: String, method: String = "GET", fields: [String] = []) async throws -> RawHTTPResponse {
        try await RawHTTPConnection.with(port: port) { connection in
            try await connection.send([path], method: method, fields: fields)
            return try #require(try await connection.response(head: method == "HEAD"))
        }
    }

    func metric(_ server: Server, _ line: String) async throws -> Bool {
        String(decoding: try await ask(server.port, "/metrics").body, as: UTF8.self).contains(line)
    }

    /// (fields, refused?) of a `POST /cache/clear-disk`; `PORT` stands for the app's port.
    static let posts: [([String], Bool)] = [
        ([], false),  // not from a browser: `emojiart cache clear --app`, curl
        (["Host: 127.0.0.1:PORT"], false),
        (["Host: 127.0.0.1:PORT", "Origin: https://evil.example"], true),
        (["Host: 127.0.0.1:PORT", "Origin: null"], true),
        (["Host: 127.0.0.1:PORT", "Origin: http://localhost:PORT"], true),  // another site
        (["Host: 127.0.0.1:PORT", "Origin: http://127.0.0.1:1"], true),  // another origin of the same site
        (["Host: 127.0.0.1:PORT", "Origin: http://127.0.0.1:PORT"], false),
        (["Host: 127.0.0.1:PORT", "Origin: http://127.0.0.1:PORT", "Sec-Fetch-Site: same-origin"], false),
        (["Host: 127.0.0.1:PORT", "Origin: https://evil.example", "Sec-Fetch-Site: same-origin"], true),
        (["Host: 127.0.0.1:PORT", "Sec-Fetch-Site: cross-site"], true),
        (["Host: 127.0.0.1:PORT", "Sec-Fetch-Site: same-site"], true),  // two ports of one address are one site
        (["Host: 127.0.0.1:PORT", "Sec-Fetch-Site: same-origin"], false),
        (["Host: 127.0.0.1:PORT", "Sec-Fetch-Site: none"], false),  // typed by the person, a bookmark
        (["Host: 127.0.0.1:PORT", "Sec-Fetch-Site: cross-site", "Origin: http://127.0.0.1:PORT"], true),
        (["Host: localhost:PORT", "Origin: http://localhost:PORT", "Sec-Fetch-Site: same-origin"], false),
        // Behind a proxy that ends TLS: the Host has no port, the origin the scheme's default.
        (["Host: emojiart.example", "Origin: https://emojiart.example", "Sec-Fetch-Site: same-origin"], false),
        (["Host: emojiart.example", "Origin: https://emojiart.example:8443"], true),
        (["Host: [::1]:PORT", "Origin: http://[::1]:PORT", "Sec-Fetch-Site: same-origin"], false),
        (["Host: [::1]:PORT", "Origin: http://[::2]:PORT"], true),
    ]

    @Test func stateChangingRequestsOnlyFromTheAppsOwnPages() async throws {
        try await withServer { (server: Server) async throws in
            var refusals = 0
            for (template, refused) in Self.posts {
                let fields = template.map { $0.replacingOccurrences(of: "PORT", with: "\(server.port)") }
                let entries = await server.pipeline.stats().diskEntries
                #expect(entries > 0, "the disk cache holds the verified originals")
                let answer = try await ask(server.port, "/cache/clear-disk", method: "POST", fields: fields)
                if refused {
                    refusals += 1
                    #expect(answer.status == 403, "\(fields)")
                    #expect(answer["content-type"]?.hasPrefix("text/html") == true)
                    #expect(String(decoding: answer.body, as: UTF8.self).contains("this request came from another site"), "a page that says why")
                    #expect(await server.pipeline.stats().diskEntries == entries, "\(fields): the disk cache is untouched")
                } else {
                    #expect(answer.status == 303, "\(fields): \(answer)")
                    #expect(await server.pipeline.stats().diskEntries == 0, "\(fields): the disk cache is cleared")
                    // Filled again for the next case: a thumbnail made from an original fetched anew.
                    await server.pipeline.clearMemory()
                    #expect(try await ask(server.port, "/thumbs/5").status == 200)
                    await server.pipeline.flush()  // its writes follow the answer
                }
            }
            #expect(try await metric(server, #"emojiart_refused_requests_total{reason="cross_site"} \#(refusals)"#))
        }
    }

    /// Only the app's own pages may open an event stream, by the rule of the state-changing
    /// requests: a page of another site could otherwise take every stream from the app's own pages
    /// (attacker round 5: a page that opened and dropped `/events` in a loop). A refused request is
    /// refused before it would take a place (403 with every place taken, not 503), and a stream's
    /// place comes back as soon as its connection closes (the heartbeat, which would also find
    /// it, is an hour here).
    @Test func eventStreamsOnlyForTheAppsOwnPages() async throws {
        try await withVerifiedApp(
            allowedHosts: ["emojiart.example", "::1"], configure: { $0.maxEventStreams = 1; $0.eventStreamHeartbeat = .seconds(3600) }
        ) { port, _, services in
            let open = services.eventStreams.open
            let cases = Self.posts.map { template, refused in (template.map { $0.replacingOccurrences(of: "PORT", with: "\(port)") }, refused) }
            // Every place taken by a stream of the app's own page, held open meanwhile.
            try await RawHTTPConnection.with(port: port) { holder in
                try await holder.send(["/events"], fields: ["Host: 127.0.0.1:\(port)", "Sec-Fetch-Site: same-origin"])
                #expect(try await holder.response()?.status == 200)
                #expect(open.value == 1)
                for (fields, refused) in cases {
                    #expect(try await ask(port, "/events", fields: fields).status == (refused ? 403 : 503), "\(fields)")
                }
            }
            for (fields, refused) in cases where !refused {
                // The last stream's connection closed: its place comes back.
                for await count in open.stream() where count == 0 { break }
                #expect(try await ask(port, "/events", fields: fields).status == 200, "\(fields)")
            }
        }
    }

    @Test func retryAndClearMemoryAreGuardedToo() async throws {
        try await withServer { (server: Server) async throws in
            let cross = ["Host: 127.0.0.1:\(server.port)", "Sec-Fetch-Site: cross-site"]
            #expect(await server.pipeline.stats().memoryEntries > 0)
            #expect(try await ask(server.port, "/cache/clear-memory", method: "POST", fields: cross).status == 403)
            #expect(await server.pipeline.stats().memoryEntries > 0)
            #expect(try await ask(server.port, "/retry", method: "POST", fields: cross).status == 403)
            let same = ["Host: 127.0.0.1:\(server.port)", "Sec-Fetch-Site: same-origin", "Origin: http://127.0.0.1:\(server.port)"]
            #expect(try await ask(server.port, "/cache/clear-memory", method: "POST", fields: same).status == 303)
            #expect(await server.pipeline.stats().memoryEntries == 0)
        }
    }

    /// Every route answers 421 to a host name the app does not serve: pages, JSON, metrics,
    /// images (memory hits of the fast lane included), scripts, actions.
    @Test(arguments: ["evil.example", "evil.example:PORT", "127.0.0.1.evil.example", "localhost.evil.example", "[::2]:PORT", "::1", ""])
    func aHostTheAppDoesNotServeIs421(host: String) async throws {
        try await withServer { (server: Server) async throws in
            let field = "Host: " + host.replacingOccurrences(of: "PORT", with: "\(server.port)")
            #expect(try await ask(server.port, "/thumbs/5").status == 200)  // a memory hit now
            let entries = await server.pipeline.stats().diskEntries
            for (path, method) in [("/", "GET"), ("/pieces/4", "GET"), ("/stats", "GET"), ("/metrics", "GET"), ("/health", "GET"),
                                   ("/events", "GET"), ("/thumbs/5", "GET"), ("/thumbs/5", "HEAD"), ("/large/5", "GET"),
                                   ("/assets/app.js", "GET"), ("/nowhere", "GET"), ("/cache/clear-disk", "POST")] {
                let answer = try await ask(server.port, path, method: method, fields: [field])
                #expect(answer.status == 421, "\(method) \(path) with \(field)")
                #expect(answer["x-content-type-options"] == "nosniff")
            }
            #expect(await server.pipeline.stats().diskEntries == entries)
            #expect(try await metric(server, #"emojiart_refused_requests_total{reason="foreign_host"} 12"#))
        }
    }

    @Test(arguments: ["127.0.0.1", "127.0.0.1:PORT", "localhost", "LocalHost:PORT", "localhost.", "emojiart.example", "EMOJIART.example:443", "[::1]:PORT", "[::1]"])
    func theAppsOwnHostsAreServed(host: String) async throws {
        try await withServer { (server: Server) async throws in
            let field = "Host: " + host.replacingOccurrences(of: "PORT", with: "\(server.port)")
            for path in ["/", "/stats", "/thumbs/5", "/thumbs/5"] {
                #expect(try await ask(server.port, path, fields: [field]).status == 200, "\(path) with \(field)")
            }
        }
    }

    /// RFC 9112 3.2, on the app as built (text compression on), with the lane and without: an
    /// HTTP/1.1 request without `Host`, with two, or with one that is no authority is answered 400
    /// and ends its connection (the requests before it answered first); a request in absolute form
    /// is a request to its target's host, whatever its `Host` says, so a foreign target is 421 even
    /// with the app's own name in `Host`. HTTP/1.0 needs no `Host`, and its connection ends with
    /// the answer unless it asks for keep-alive (RFC 9112 9.3).
    @Test(arguments: [true, false])
    func theHostIsNamedOnceAndTheTargetsHostWins(fastLane: Bool) async throws {
        try await withVerifiedApp(allowedHosts: ["emojiart.example"], fastLane: fastLane) { port, _, _ in
            let refused = [
                "GET /thumbs/5 HTTP/1.1\n\n",
                "GET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1\nHost: 127.0.0.1\n\n",
                "GET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1\nhost: evil.example\n\n",
                "GET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1:\(port)/x\n\n",
                "GET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1 evil.example\n\n",
                "GET http://user@127.0.0.1:\(port)/thumbs/5 HTTP/1.1\nHost: 127.0.0.1\n\n",
                "GET http:///thumbs/5 HTTP/1.1\nHost: 127.0.0.1\n\n",
                "POST /cache/clear-disk HTTP/1.1\nContent-Length: 0\n\n",
            ]
            for text in refused {
                let (answer, rest) = try await RawHTTPConnection.with(port: port) { connection in
                    try await connection.send(text)
                    let answer = try await connection.response()
                    // The end of the connection, awaited only after a 400: a connection kept open
                    // would hold the test until the idle time-out.
                    return (answer, answer?.status == 400 ? try await connection.closed() : nil)
                }
                #expect(answer?.status == 400 && rest?.isEmpty == true, "\(text.debugDescription), fast lane \(fastLane)")
            }
            let answered: [(String, Int)] = [
                ("GET /thumbs/5 HTTP/1.0\n\n", 200),
                ("GET /thumbs/5 HTTP/1.1\nHost:   127.0.0.1  \n\n", 200),
                ("GET http://127.0.0.1:\(port)/thumbs/5 HTTP/1.1\nHost: evil.example\n\n", 200),
                ("GET HTTP://EMOJIART.example?x HTTP/1.1\nHost: 127.0.0.1\n\n", 200),  // the page, `/?x`
                ("GET http://evil.example/thumbs/5 HTTP/1.1\nHost: 127.0.0.1\n\n", 421),
                ("GET http://evil.example/ HTTP/1.0\n\n", 421),
                ("POST http://evil.example/cache/clear-disk HTTP/1.1\nHost: 127.0.0.1\nContent-Length: 0\n\n", 421),
            ]
            for (text, status) in answered {
                // Twice: the second time, `/thumbs/5` is a memory hit (the lane answers an
                // HTTP/1.1 one for a host the app serves; the others reach the route).
                for _ in 0..<2 {
                    let answer = try await RawHTTPConnection.with(port: port) { connection in
                        try await connection.send(text)
                        return try await connection.response()
                    }
                    #expect(answer?.status == status, "\(text.debugDescription), fast lane \(fastLane)")
                }
            }
            // HTTP/1.0 ends the connection with the answer, unless it asks to keep it.
            let (closing, after) = try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /thumbs/5 HTTP/1.0\n\n")
                return (try await connection.response()?.status, try await connection.closed())
            }
            #expect(closing == 200 && after.isEmpty, "HTTP/1.0 closes, fast lane \(fastLane)")
            // A request to switch protocols is answered and ends its connection: NIO's decoder reads
            // nothing after it, so the request pipelined behind it would wait for the idle time-out
            // (this server has none: were the connection kept, the test would wait to its limit).
            let (upgraded, upgradeRest) = try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1\nConnection: Upgrade\nUpgrade: websocket\n\nGET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1\n\n")
                return (try await connection.response()?.status, try await connection.closed())
            }
            #expect(upgraded == 200 && upgradeRest.isEmpty, "an upgrade is answered and its connection closed, fast lane \(fastLane)")
            let kept = try await RawHTTPConnection.with(port: port) { connection in
                var statuses: [Int?] = []
                for _ in 0..<2 {
                    try await connection.send("GET /thumbs/5 HTTP/1.0\nConnection: keep-alive\n\n")
                    statuses.append(try await connection.response()?.status)
                }
                return statuses
            }
            #expect(kept == [200, 200], "HTTP/1.0 with keep-alive keeps it, fast lane \(fastLane)")
            let (statuses, rest) = try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1\n\nGET /thumbs/5 HTTP/1.1\n\nGET /thumbs/5 HTTP/1.1\nHost: 127.0.0.1\n\n")
                let statuses = [try await connection.response()?.status, try await connection.response()?.status]
                return (statuses, statuses == [200, 400] ? try await connection.closed() : nil)
            }
            #expect(statuses == [200, 400] && rest?.isEmpty == true, "the one before it answered; none after it")
        }
    }

    /// `back()` sends the person to the page the form was on only when it is one of the app's own.
    @Test func backStaysOnTheAppsOwnPages() async throws {
        try await withServer { (server: Server) async throws in
            let own = "http://127.0.0.1:\(server.port)"
            let cases: [(String, String)] = [
                ("\(own)/pieces/3", "/pieces/3"),
                ("\(own)/", "/"),
                ("https://evil.example/%2Fevil.example/landing", "/"),
                ("https://evil.example/pieces/3", "/"),
                ("http://localhost:\(server.port)/pieces/3", "/"),  // another origin than the request's Host
                ("http://127.0.0.1:1/pieces/3", "/"),
                ("\(own)//evil.example/landing", "/"),
                ("\(own)/%2Fevil.example/landing", "/%2Fevil.example/landing"),  // one slash: a path here
                ("http://user@127.0.0.1:\(server.port)/pieces/3", "/"),
                ("/pieces/3", "/"),
                ("not a url", "/"),
            ]
            for (referer, location) in cases {
                let fields = ["Host: 127.0.0.1:\(server.port)", "Referer: \(referer)"]
                let answer = try await ask(server.port, "/cache/clear-memory", method: "POST", fields: fields)
                #expect(answer.status == 303)
                #expect(answer["location"] == location, "Referer: \(referer)")
            }
        }
    }

    /// Every answer says nosniff; every page carries the policy (no inline script or style
    /// allowed, no framing) and sends the full Referer only to the app itself; no page has an
    /// inline script, style or event handler that the policy would block.
    @Test func securityHeadersOnEveryAnswer() async throws {
        try await withServer { (server: Server) async throws in
            let etag = try #require(try await ask(server.port, "/thumbs/5")["etag"])
            let pages = ["/", "/pieces/4", "/pieces/500", "/nowhere"]
            for path in pages {
                let answer = try await ask(server.port, path)
                #expect(answer["content-security-policy"] == "default-src 'self'; frame-ancestors 'none'", "\(path)")
                #expect(answer["referrer-policy"] == "same-origin", "\(path)")
                #expect(answer["x-content-type-options"] == "nosniff", "\(path)")
                let html = String(decoding: answer.body, as: UTF8.self)
                #expect(html.contains("<script src=\"/assets/app.js\"></script>"), "\(path)")
                #expect(html.range(of: #"<script(?![^>]*\bsrc=)"#, options: .regularExpression) == nil, "an inline script in \(path)")
                #expect(html.range(of: #"<style|\sstyle=|\son[a-z]+="#, options: [.regularExpression, .caseInsensitive]) == nil, "inline style or handler in \(path)")
            }
            let forbidden = try await ask(server.port, "/cache/clear-disk", method: "POST", fields: ["Host: 127.0.0.1", "Origin: https://evil.example"])
            #expect(forbidden.status == 403 && forbidden["content-security-policy"] != nil && forbidden["referrer-policy"] == "same-origin")
            let others: [(String, [String], Int)] = [
                ("/thumbs/5", [], 200), ("/thumbs/5", ["If-None-Match: \(etag)"], 304), ("/large/5", [], 200),
                ("/thumbs/9999", [], 404), ("/thumbs/5?x=1", [], 400), ("/stats", [], 200), ("/metrics", [], 200),
                ("/health", [], 200), ("/assets/app.js", [], 200), ("/assets/app.css", [], 200),
            ]
            for (path, fields, status) in others {
                let answer = try await ask(server.port, path, fields: fields)
                #expect(answer.status == status, "\(path) \(fields)")
                #expect(answer["x-content-type-options"] == "nosniff", "\(path) \(fields)")
            }
            let script = try await ask(server.port, "/assets/app.js")
            #expect(script["content-type"] == "text/javascript; charset=utf-8")
            #expect(String(decoding: script.body, as: UTF8.self).contains("new EventSource(\"/events\")"))
            let revalidated = try await ask(server.port, "/assets/app.css", fields: ["If-None-Match: \(try #require(script["etag"]))"])
            #expect(revalidated.status == 200, "another file's ETag")
            let css = try await ask(server.port, "/assets/app.css")
            #expect(try await ask(server.port, "/assets/app.css", fields: ["If-None-Match: \(try #require(css["etag"]))"]).status == 304)
        }
    }

    /// Image URLs take only what they define (`v=`, once): any other query would be a new entry
    /// in a cache in front for the same image.
    @Test(arguments: ["/thumbs/5?x=1", "/large/5?x", "/thumbs/5?v=1&x=2", "/thumbs/5?v=1&v=2", "/thumbs/9999?x=1", "/large/5?V=1"])
    func imageURLsWithUndefinedParametersAre400(path: String) async throws {
        try await withServer { (server: Server) async throws in
            let answer = try await ask(server.port, path)
            #expect(answer.status == 400, "\(path)")
            #expect(answer["content-type"]?.hasPrefix("application/json") == true)
            #expect(String(decoding: answer.body, as: UTF8.self).contains("v="), "says what image URLs take")
            #expect(try await ask(server.port, "/thumbs/5?v=1").status == 200, "v= is defined (ignored outside immutable mode)")
            #expect(try await ask(server.port, "/thumbs/5?").status == 200, "an empty query names no parameter")
        }
    }
}

/// ``AllowedHosts`` case by case: what the fast lane and the middleware compare.
@Suite struct AllowedHostsTests {
    @Test func hostsServed() {
        let loopback = AllowedHosts(bound: "127.0.0.1", extra: ["Emojiart.Example."])
        let allowed = ["127.0.0.1", "127.0.0.1:8080", "localhost", "LOCALHOST:1", "localhost.", "emojiart.example", "emojiart.example:443"]
        let refused = ["evil.example", "127.0.0.2", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:123456", "127.0.0.1:x", "[127.0.0.1]",
                       "localhost:80:80", "user@localhost", "localhost/x", "", ":80", "[::1]", "emojiart.example.evil", "xlocalhost", "local host"]
        for host in allowed { #expect(loopback.allows(host: host.utf8[...]), "\(host)") }
        for host in refused { #expect(!loopback.allows(host: host.utf8[...]), "\(host)") }

        let v6 = AllowedHosts(bound: "::1")
        for host in ["[::1]", "[::1]:8080", "localhost"] { #expect(v6.allows(host: host.utf8[...]), "\(host)") }
        for host in ["::1", "[::1", "[::2]:8080", "127.0.0.1", "[::1]x"] { #expect(!v6.allows(host: host.utf8[...]), "\(host)") }

        // Bound to every address: any address, no other name.
        let any = AllowedHosts(bound: "0.0.0.0", extra: ["edge.example"])
        for host in ["10.1.2.3:8080", "[fe80::1]", "localhost", "edge.example"] { #expect(any.allows(host: host.utf8[...]), "\(host)") }
        for host in ["evil.example", "10.1.2.3.evil.example"] { #expect(!any.allows(host: host.utf8[...]), "\(host)") }
    }

    @Test func sameOrigin() {
        let same: [(String, String)] = [
            ("http://127.0.0.1:8080", "127.0.0.1:8080"), ("http://LOCALHOST:8080", "localhost:8080"), ("http://a.example", "a.example"),
            ("https://a.example", "a.example"), ("http://a.example:80", "a.example"), ("http://[::1]:8080", "[::1]:8080"),
        ]
        let other: [(String, String)] = [
            ("http://127.0.0.1:8081", "127.0.0.1:8080"), ("http://localhost:8080", "127.0.0.1:8080"), ("null", "a.example"),
            ("https://a.example:444", "a.example"), ("ftp://a.example", "a.example"), ("http://a.example", "a.example:8080"),
            ("http://a.example.evil", "a.example"), ("http://a.example/path", "a.example"), ("http://", "a.example"), ("", ""),
        ]
        for (origin, host) in same { #expect(AllowedHosts.isSameOrigin(origin[...], as: host[...]), "\(origin) for \(host)") }
        for (origin, host) in other { #expect(!AllowedHosts.isSameOrigin(origin[...], as: host[...]), "\(origin) for \(host)") }
    }

    @Test func namesTheCommandLineAccepts() {
        for name in ["emojiart.example", "10.0.0.1", "::1", "[::1]", "localhost"] { #expect(AppConfiguration.isValidHostName(name), "\(name)") }
        for name in ["http://emojiart.example", "emojiart.example:8080", "a/b", "", "a b", "[::1]:80"] {
            #expect(!AppConfiguration.isValidHostName(name), "\(name)")
        }
    }
}
