public import Foundation

extension URL {
    /// `scheme://host:port`, the port always written (80 for http, 443 for https when the URL
    /// has none): the one key state kept per origin goes by. The cache's per-host download limit
    /// and an unreachable origin's back-off, and the app's trust entry per gallery, all use it.
    public var originKey: String {
        let scheme = scheme ?? "http"
        return "\(scheme)://\(host ?? ""):\(port ?? (scheme == "https" ? 443 : 80))"
    }
}
