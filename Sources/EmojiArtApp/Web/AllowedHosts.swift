import Foundation

/// The host names the app answers to, and the checks of the request fields that name a host:
/// `Host`, `Origin` and `Referer`.
///
/// A page at another name that resolves to the app's address (DNS rebinding) sends its own name
/// in `Host`: only the bound address, `localhost` and the names given with `--allowed-host` are
/// served; any other name gets 421. When the app is bound to every address (`0.0.0.0`, `::`), any
/// IP address in `Host` is served too: an address cannot be rebound, a name can.
///
/// The checks compare bytes, without allocating: the fast lane runs ``allows(host:)`` on every
/// memory hit. Immutable and `Sendable`.
struct AllowedHosts: Sendable {
    /// The names, lowercased, without brackets or a trailing dot.
    let names: [[UInt8]]
    /// Whether any IP address is served (the app is bound to every address).
    let anyAddress: Bool

    /// The names served by an app bound to `bound`, plus `extra` (`--allowed-host`).
    init(bound: String, extra: [String] = []) {
        var names: [[UInt8]] = []
        for name in [bound, "localhost"] + extra {
            guard let host = Self.split(name.utf8[...], portAllowed: false)?.host else { continue }
            let bytes = host.map(Self.lowercased)
            if !names.contains(bytes) { names.append(bytes) }
        }
        self.names = names
        anyAddress = ["0.0.0.0", "::", "[::]"].contains(bound)
    }

    /// Whether the authority `host` (a `Host` field: a name or an address, maybe with a port) is
    /// one the app serves.
    func allows(host: Substring.UTF8View) -> Bool {
        guard let (name, _) = Self.split(host, portAllowed: true) else { return false }
        if anyAddress, Self.isAddress(name) { return true }
        for allowed in names where allowed.count == name.count {
            if zip(allowed, name).allSatisfy({ $0 == Self.lowercased($1) }) { return true }
        }
        return false
    }

    /// Whether `origin` (an `Origin` field, or the origin of a `Referer`: `scheme://host[:port]`)
    /// is the origin of a request to `authority` (its `Host`): the same host and the same port.
    /// A `Host` without a port stands for the origin scheme's default port, the scheme a browser
    /// used (a proxy in front may have ended TLS).
    static func isSameOrigin(_ origin: Substring, as authority: Substring) -> Bool {
        guard let separator = origin.range(of: "://") else { return false }
        let scheme = origin[..<separator.lowerBound].lowercased()
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return false
        }
        guard let (originHost, originPort) = split(origin[separator.upperBound...].utf8, portAllowed: true),
              let (host, port) = split(authority.utf8, portAllowed: true),
              originHost.count == host.count,
              zip(originHost, host).allSatisfy({ lowercased($0) == lowercased($1) })
        else { return false }
        return (originPort ?? defaultPort) == (port ?? defaultPort)
    }

    /// An authority's host (without brackets or a trailing dot) and port: `nil` when it is not
    /// `host`, `host:port`, `[v6]` or `[v6]:port` with a host of name or address characters
    /// and a port of 1 to 5 digits (up to 65535).
    static func split(_ authority: Substring.UTF8View, portAllowed: Bool) -> (host: Substring.UTF8View, port: Int?)? {
        var host: Substring.UTF8View
        var rest: Substring.UTF8View
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            rest = authority[authority.index(after: close)...]
            guard host.contains(UInt8(ascii: ":")), host.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else {
                return nil
            }
        } else {
            let colon = authority.firstIndex(of: UInt8(ascii: ":")) ?? authority.endIndex
            host = authority[..<colon]
            rest = authority[colon...]
            if host.last == UInt8(ascii: "."), host.count > 1 { host = host.dropLast() }
            guard !host.isEmpty, host.allSatisfy({ isNameByte($0) }) else {
                // A bare IPv6 address, as `--host ::1` gives it.
                guard !portAllowed, authority.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }),
                      authority.contains(UInt8(ascii: ":"))
                else { return nil }
                return (authority, nil)
            }
        }
        guard let colon = rest.first else { return (host, nil) }
        guard portAllowed, colon == UInt8(ascii: ":") else { return nil }
        let digits = rest.dropFirst()
        guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        let port = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard port <= 65535 else { return nil }
        return (host, port)
    }

    /// Whether `name` is an IP address: IPv4's digits and dots (a name of digits and dots is an
    /// address to a browser), or IPv6's hex digits and colons.
    static func isAddress(_ name: Substring.UTF8View) -> Bool {
        let isIPv4 = name.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") }
        let isIPv6 = name.contains(UInt8(ascii: ":")) && name.allSatisfy { isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }
        return isIPv4 || isIPv6
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    /// Letters, digits, `-`, `.` and `_`: what a DNS name (or an IPv4 address) is made of.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}
