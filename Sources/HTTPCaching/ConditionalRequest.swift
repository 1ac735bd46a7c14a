public import Foundation

/// RFC 9110 conditional GETs as an origin answers them: strong entity tags and `Last-Modified`
/// with one-second precision.
public enum ConditionalRequest {
    /// Whether a GET with these request fields may be answered `304 Not Modified` for a
    /// representation with `etag` and `lastModified`. `If-None-Match`, when present, decides
    /// alone (RFC 9110 13.2.2); otherwise `If-Modified-Since` does, and a date that does not
    /// parse is ignored.
    public static func notModified(ifNoneMatch: String?, ifModifiedSince: String?, etag: String, lastModified: Date) -> Bool {
        if let ifNoneMatch { return matches(ifNoneMatch, etag: etag) }
        guard let ifModifiedSince, let since = HTTPDate.parse(ifModifiedSince.trimmingOWS()) else { return false }
        return lastModified.timeIntervalSince1970.rounded(.down) <= since.timeIntervalSince1970
    }

    /// `If-None-Match` (RFC 9110 13.1.2): `*`, or a list of entity tags compared weakly (a weak
    /// tag matches its strong twin).
    public static func matches(_ ifNoneMatch: String, etag: String) -> Bool {
        let strong = etag.hasPrefix("W/") ? String(etag.dropFirst(2)) : etag
        return ifNoneMatch.split(separator: ",").contains { candidate in
            let tag = String(candidate).trimmingOWS()
            return tag == "*" || tag == strong || tag == "W/" + strong
        }
    }
}
