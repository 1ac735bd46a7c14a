public import Foundation

extension URL {
    /// `scheme://host:port`, the port always written (80 for http, 443 for https when the URL
    /// has none): the one key state kept per origin goes by. The cache's per-host download limit
    /// and an unreachable origin's back-off, and the app's trust entry per gallery, all use it.
    /// Written by ``origin(scheme:host:port:)``, so an IPv6 host is in brackets.
    public var originKey: String {
        let scheme = scheme ?? "http"
        return Self.origin(scheme: scheme, host: host ?? "", port: port ?? (scheme == "https" ? 443 : 80))
    }
}

extension URL {
    /// `scheme://host:port` for `host` as a server is bound to it or a client names it: an IPv6
    /// address goes in brackets (`http://[::1]:8080`), and no port is written when `port` is
    /// `nil`. The one place EmojiArt writes an origin from its parts: the addresses the commands
    /// print and ask, and the origin of a `Referer` the app compares with its own.
    public static func origin(scheme: String = "http", host: String, port: Int?) -> String {
        let host = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }
}
