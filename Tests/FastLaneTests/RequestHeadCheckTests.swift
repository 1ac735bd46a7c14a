@testable import FastLane
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

/// RFC 9112 3.2's `Host` rules, head by head, and what the check hands on in a channel.
@Suite struct RequestHeadCheckTests {
    static func head(_ uri: String, _ hosts: [String], version: HTTPVersion = .http1_1) -> HTTPRequestHead {
        HTTPRequestHead(version: version, method: .GET, uri: uri, headers: HTTPHeaders(hosts.map { ("Host", $0) }))
    }

    static let verdicts: [(HTTPRequestHead, RequestHeadCheck.Verdict)] = [
        (head("/thumbs/5", ["127.0.0.1:8080"]), .pass),
        (head("/thumbs/5", ["[::1]:8080"]), .pass),
        (head("/thumbs/5", [""]), .pass),  // allowed empty; the app refuses the name
        (head("/thumbs/5", ["xn--n28h.example"]), .pass),
        (head("/thumbs/5", [], version: .http1_0), .pass),
        (head("*", ["a"]), .pass),
        (head("/thumbs/5", ["  a.example:80\t "]), .rewrite(host: "a.example:80", target: "/thumbs/5")),
        (head("/thumbs/5", [" a b "]), .refuse(.invalidHeaderToken)),
        (head("/thumbs/5", []), .refuse(.invalidHeaderToken)),
        (head("/thumbs/5", [], version: .init(major: 1, minor: 2)), .refuse(.invalidHeaderToken)),
        (head("/thumbs/5", ["a", "a"]), .refuse(.invalidHeaderToken)),
        (head("/thumbs/5", ["a", "b"], version: .http1_0), .refuse(.invalidHeaderToken)),
        (head("/thumbs/5", ["a/b"]), .refuse(.invalidHeaderToken)),
        (head("/thumbs/5", ["a b"]), .refuse(.invalidHeaderToken)),
        (head("/thumbs/5", ["a@b"]), .refuse(.invalidHeaderToken)),
        (head("http://a.example/thumbs/5?v=1", ["b"]), .rewrite(host: "a.example", target: "/thumbs/5?v=1")),
        (head("HTTPS://A.example:8443", ["b"]), .rewrite(host: "A.example:8443", target: "/")),
        (head("http://a.example?x", [], version: .http1_0), .rewrite(host: "a.example", target: "/?x")),
        (head("http://[::1]:80#f", ["b"]), .rewrite(host: "[::1]:80", target: "/#f")),
        (head("http://u@a.example/", ["a.example"]), .refuse(.invalidURL)),
        (head("http:///x", ["a"]), .refuse(.invalidURL)),
        (head("http://a b/x", ["a"]), .refuse(.invalidURL)),
        (head("ftp://a.example/x", ["a"]), .refuse(.invalidURL)),  // the router would read `/x`
        (head("a.example:443", ["a.example:443"]), .refuse(.invalidURL)),  // authority form, not CONNECT
        (head("x", ["a"]), .refuse(.invalidURL)),
        (HTTPRequestHead(version: .http1_1, method: .CONNECT, uri: "a.example:443", headers: ["Host": "a.example:443"]), .pass),
    ]

    @Test func eachHeadsVerdict() {
        for (head, verdict) in Self.verdicts {
            #expect(RequestHeadCheck.check(head) == verdict, "\(head.version) \(head.uri) \(head.headers)")
        }
        // The field's name in any case.
        var headers = HTTPHeaders([("HOST", "a"), ("host", "a")])
        #expect(RequestHeadCheck.check(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: headers)) == .refuse(.invalidHeaderToken))
        headers = HTTPHeaders([("hOsT", "a"), ("Hosts", "b"), ("X-Host", "c")])
        #expect(RequestHeadCheck.check(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: headers)) == .pass)
    }

    /// HTTP/1.0 ends its connection with its answer unless it asks to keep it, and so does a
    /// request to switch protocols or a `CONNECT` (NIO's decoder reads nothing after them):
    /// Hummingbird, which sees no version, is told so with `Connection: close`.
    @Test func anHTTP10RequestWithoutKeepAliveSaysClose() throws {
        let channel = EmbeddedChannel(handler: RequestHeadCheck())
        defer { _ = try? channel.finish() }
        for (version, connection, forwarded) in [
            (HTTPVersion.http1_0, nil, ["close"]), (.http1_0, "Close", ["close"]), (.http1_0, "keep-alive", ["keep-alive"]),
            (.http1_0, "close", ["close"]), (.http1_1, nil, []), (.http1_1, "close", ["close"]),
            (.http1_1, "upgrade", ["close"]), (.http1_1, "keep-alive, Upgrade", ["close"]),
        ] as [(HTTPVersion, String?, [String])] {
            var head = HTTPRequestHead(version: version, method: .GET, uri: "/", headers: ["Host": "a"])
            if let connection { head.headers.add(name: "Connection", value: connection) }
            if connection?.lowercased().contains("upgrade") == true { head.headers.add(name: "Upgrade", value: "websocket") }
            try channel.writeInbound(HTTPServerRequestPart.head(head))
            guard case let .head(passed)? = try channel.readInbound(as: HTTPServerRequestPart.self) else {
                Issue.record("no head for \(version) \(String(describing: connection))")
                continue
            }
            #expect(passed.headers["connection"] == forwarded, "\(version) \(String(describing: connection))")
        }
        // A CONNECT, and an `Upgrade` whose `Connection` does not name it (broader than the
        // decoder's rule on purpose).
        for head in [
            HTTPRequestHead(version: .http1_1, method: .CONNECT, uri: "a:443", headers: ["Host": "a:443"]),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: ["Host": "a", "Upgrade": "h2c"]),
        ] {
            try channel.writeInbound(HTTPServerRequestPart.head(head))
            guard case let .head(passed)? = try channel.readInbound(as: HTTPServerRequestPart.self) else {
                Issue.record("no head for \(head.method) \(head.headers)")
                continue
            }
            #expect(passed.headers["connection"] == ["close"], "\(head.method) \(head.headers)")
        }
    }

    /// A refused head becomes a parse error, as the decoder's own, and nothing after it goes on;
    /// a head in absolute form goes on rewritten; any other part, untouched.
    @Test func inAChannel() throws {
        let channel = EmbeddedChannel(handler: RequestHeadCheck())
        defer { _ = try? channel.finish() }
        try channel.writeInbound(HTTPServerRequestPart.head(Self.head("http://a.example/x", ["b"])))
        let rewritten = try channel.readInbound(as: HTTPServerRequestPart.self)
        guard case let .head(head)? = rewritten else { Issue.record("no head: \(String(describing: rewritten))"); return }
        #expect(head.uri == "/x" && head.headers["host"] == ["a.example"])
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        #expect(try channel.readInbound(as: HTTPServerRequestPart.self) == .end(nil))

        #expect(throws: HTTPParserError.invalidHeaderToken) {
            try channel.writeInbound(HTTPServerRequestPart.head(Self.head("/", [])))
        }
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        try channel.writeInbound(HTTPServerRequestPart.head(Self.head("/", ["a"])))
        #expect(try channel.readInbound(as: HTTPServerRequestPart.self) == nil, "nothing after a refused head")
    }

    /// One spelling per route (issue 40): a target with an empty segment, a trailing slash, a dot
    /// segment or a percent-encoded byte in its path has not; its query is not looked at.
    @Test(arguments: [
        ("/", true), ("/stats", true), ("/thumbs/2x/5?v=0123", true), ("/gallery/image?5", true),
        ("/a/.../b", true), ("/a.b/.c", true), ("/assets/app.css", true), ("/?a//b/../c/%2e", true), ("*", true),
        ("/stats/", false), ("//stats", false), ("/stats//", false), ("//", false), ("/thumbs//5", false),
        ("/metrics/.", false), ("/metrics/..", false), ("/./stats", false), ("/a/../stats", false), ("/.", false),
        ("/..", false), ("/stats/?x", false), ("/stats/.?x", false), ("/stats/#f", false), ("/st%61ts", false),
        ("/thumbs/%2e%2e/5", false), ("/events/", false),
    ])
    func aTargetHasItsRoutesOneSpelling(target: String, expected: Bool) {
        #expect(FastLane.hasOneSpelling(target) == expected, "\(target)")
    }

    /// The lane asks its responder only about a target in its one spelling: any other goes on
    /// to the router (and its 404) whatever the responder would say.
    @Test func theLaneAsksOnlyAboutOneSpelling() {
        final class Asked: Sendable { let targets = Mutex<[String]>([]) }
        let asked = Asked()
        let lane = FastLane(serverName: "Test") { request in
            asked.targets.withLock { $0.append(request.target) }
            return FastLane.Answer(status: .ok, headerFields: [:])
        }
        for target in ["/stats", "/stats/", "//stats", "/metrics/.", "/a/../stats"] {
            let request = FastLane.Request(HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: ["Host": "a"]))
            #expect((lane.respond(request) != nil) == (target == "/stats"), "\(target)")
        }
        #expect(asked.targets.withLock { $0 } == ["/stats"])
    }
}
