import Foundation
import NIOCore
import NIOHTTP1

/// RFC 9112's rules for the host an HTTP/1 request names (section 3.2) and for the end of an
/// HTTP/1.0 connection (section 9.3), applied right after NIO's decoder, so that the lane,
/// Hummingbird's router and the app's guards all read one host, and Hummingbird (which sees HTTP
/// types, without a version) closes what HTTP/1.0 closes:
/// - An HTTP/1.1 request without a `Host` field, any request with more than one, and one whose
///   `Host` is not made of an authority's characters (RFC 3986: a name, an address, `[v6]`, a
///   port) are refused as a request NIO's decoder could not parse: Hummingbird answers 400 after
///   the requests before it and closes the connection; nothing after it is passed on.
/// - A request in absolute form (`GET http://host/path`) is a request to `host`: its `Host` field
///   is ignored (section 3.2.2) and it goes on in origin form (`GET /path`) with `Host: host`.
///   Userinfo (`http://user@host/`), an empty host, another scheme or any other form of target
///   (but `*` and CONNECT's `host:port`) is refused as above.
/// - A `Host` with spaces or tabs around its value goes on without them.
/// - An HTTP/1.0 request without `Connection: keep-alive` goes on with `Connection: close`: its
///   connection ends with its answer, as an HTTP/1.0 client expects (before, it stayed open until
///   the idle time-out, and a client reading to the end of the connection waited that long).
/// - So does a request that asks to switch protocols (an `Upgrade` field) or a `CONNECT`: NIO's
///   decoder reads nothing after one (it leaves the bytes to an upgrader, and these servers have
///   none), so a request pipelined behind it, perhaps another client's on a proxy's shared
///   connection, would wait for the idle time-out (attacker round 5). The decoder stops only when
///   `Connection` names `upgrade` too; the rule is broader on purpose (any `Upgrade` field), so
///   it need not follow the decoder's own reading of `Connection`'s list.
///
/// HTTP/1.0 without `Host` goes on. A request that follows the rules, as every browser's does, is
/// passed on untouched.
final class RequestHeadCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    /// Whether a request was refused: the connection ends with its 400.
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        guard case var .head(head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        let verdict = Self.check(head)
        if case let .refuse(error) = verdict {
            refused = true
            return context.fireErrorCaught(error)
        }
        let closes = Self.endsConnection(head)
        guard verdict != .pass || closes else { return context.fireChannelRead(data) }
        if case let .rewrite(host, target) = verdict {
            head.headers.remove(name: "host")
            head.headers.add(name: "Host", value: host)
            head.uri = target
        }
        if closes { head.headers.replaceOrAdd(name: "Connection", value: "close") }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// Whether `head` is HTTP/1.0 without keep-alive, asks to switch protocols or is a `CONNECT`,
    /// and does not say `Connection: close` in the one form Hummingbird reads.
    static func endsConnection(_ head: HTTPRequestHead) -> Bool {
        let last = (head.version == .http1_0 && !head.isKeepAlive) || head.headers.contains(name: "upgrade") || head.method == .CONNECT
        return last && head.headers["connection"] != ["close"]
    }

    /// What becomes of a request head.
    enum Verdict: Equatable {
        /// It goes on as it came.
        case pass
        /// It goes on to `target` (origin form), with `host` its only `Host`: a request in absolute
        /// form, or a `Host` with spaces or tabs around it (which are not part of a field's value,
        /// RFC 9110 5.5, but NIO's decoder keeps those after it).
        case rewrite(host: String, target: String)
        /// It is answered 400, as a request that fails to parse with `error`: `invalidHeaderToken`
        /// for the `Host` field, `invalidURL` for the target.
        case refuse(HTTPParserError)
    }

    /// The verdict on `head`.
    static func check(_ head: HTTPRequestHead) -> Verdict {
        var hosts = 0
        var trimmed: String?
        for (name, value) in head.headers where isHost(name) {
            hosts += 1
            var host = value.utf8[...]
            while let space = host.first, space == UInt8(ascii: " ") || space == UInt8(ascii: "\t") { host = host.dropFirst() }
            while let space = host.last, space == UInt8(ascii: " ") || space == UInt8(ascii: "\t") { host = host.dropLast() }
            guard hosts == 1, isAuthority(host) else { return .refuse(.invalidHeaderToken) }
            if host.count != value.utf8.count { trimmed = String(decoding: host, as: UTF8.self) }
        }
        if hosts == 0, head.version.major > 1 || (head.version.major == 1 && head.version.minor >= 1) { return .refuse(.invalidHeaderToken) }
        let uri = head.uri.utf8
        let unchanged = trimmed.map { Verdict.rewrite(host: $0, target: head.uri) } ?? .pass
        // Origin form, `*` (OPTIONS), or CONNECT's authority form: the router answers them.
        if uri.first == UInt8(ascii: "/") || head.uri == "*" || head.method == .CONNECT { return unchanged }
        // Otherwise only absolute form, `http://` or `https://` (any case): any other target,
        // which the router would read as a path all the same, is refused.
        guard let separator = head.uri.range(of: "://"),
              ["http", "https"].contains(head.uri[..<separator.lowerBound].lowercased())
        else { return .refuse(.invalidURL) }
        let rest = head.uri[separator.upperBound...]
        let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let host = rest[..<end]
        guard !host.isEmpty, !host.contains("@"), isAuthority(host.utf8) else { return .refuse(.invalidURL) }
        let target = rest[end...]
        return .rewrite(host: String(host), target: target.first == "/" ? String(target) : "/" + target)
    }

    /// Whether a field's name is `Host`, in any case.
    private static func isHost(_ name: String) -> Bool {
        let bytes = name.utf8
        return bytes.count == 4 && zip(bytes, "host".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    /// Whether `value` is made of an authority's characters (RFC 3986 3.2: unreserved,
    /// percent-encoded and sub-delims characters, and `:`, `[`, `]`); empty is allowed
    /// (RFC 9112 3.2). Whether the app serves that host is the app's to say.
    static func isAuthority(_ value: Substring.UTF8View) -> Bool {
        value.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "-._~%!$&'()*+,;=:[]".utf8.contains(byte)
            }
        }
    }
}

extension FastLane {
    /// Whether `target`'s path is the one spelling of a route that these servers answer: no empty
    /// segment (`//stats`), no trailing slash (`/stats/`; `/` alone is the root), no dot segment
    /// (`/metrics/.`, `/a/../stats`) and no percent-encoding (no route's path needs any, and
    /// `/st%61ts` would be `/stats` to a normaliser). Hummingbird's router skips empty segments, so
    /// without this `/stats/` and `//stats` were `/stats`, and a proxy matching the one spelling
    /// let the others past its rules (issue 40). The lane asks its responder only about a target
    /// that has it (``FastLane/init(serverName:now:respond:)``), and each server's router answers
    /// any other path 404, as a path no route has. The query (after `?`) is not looked at. A
    /// target that is not a path (`*`) is the router's to answer.
    public static func hasOneSpelling(_ target: String) -> Bool {
        let bytes = target.utf8
        guard bytes.first == UInt8(ascii: "/") else { return true }
        // The bytes of the current segment (after its `/`), and whether they are all dots.
        var length = 0
        var dots = true
        var slashes = 0
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "%") { return false }
            if byte == UInt8(ascii: "/") {
                // An empty segment, `.` or `..` before this slash.
                if length == 0 || (dots && length <= 2) { return false }
                (length, dots, slashes) = (0, true, slashes + 1)
            } else {
                length += 1
                dots = dots && byte == UInt8(ascii: ".")
            }
        }
        // The last segment: empty only for the root itself; never `.` or `..`.
        if length == 0 { return slashes == 0 }
        return !(dots && length <= 2)
    }
}
