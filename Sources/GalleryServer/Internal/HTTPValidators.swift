import Foundation

/// RFC 9110 conditional requests as the gallery answers them: strong ETags and `Last-Modified`
/// with one-second precision.
enum HTTPValidators {
    /// Whether a GET with these request fields may be answered 304 for a representation with
    /// `etag` and `lastModified`. `If-None-Match`, when present, decides alone (RFC 9110 13.2.2);
    /// otherwise `If-Modified-Since` does; an unparsable date is ignored.
    static func notModified(ifNoneMatch: String?, ifModifiedSince: String?, etag: String, lastModified: Date) -> Bool {
        if let ifNoneMatch { return matches(ifNoneMatch, etag: etag) }
        guard let ifModifiedSince, let since = parseHTTPDate(ifModifiedSince) else { return false }
        return lastModified.timeIntervalSince1970.rounded(.down) <= since.timeIntervalSince1970
    }

    /// RFC 9110 `If-None-Match`: `*`, or a list of entity tags, weak ones compared weakly.
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    /// An IMF-fixdate, as `Last-Modified` and `Date` carry it: `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(_ date: Date) -> String {
        formatter().string(from: date)
    }

    /// Parses an IMF-fixdate; the obsolete RFC 850 and asctime forms are not accepted (RFC 9110
    /// lets a recipient ignore a date it cannot parse, and then the request is unconditional).
    static func parseHTTPDate(_ text: String) -> Date? {
        guard text.utf8.count == 29 else { return nil }
        return formatter().date(from: text)
    }

    private static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }
}
