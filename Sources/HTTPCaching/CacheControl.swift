/// The `Cache-Control` field of a response, read by RFC 9111's own grammar (section 5.2):
///
/// ```
/// Cache-Control   = #cache-directive
/// cache-directive = token [ "=" ( token / quoted-string ) ]
/// ```
///
/// It is not an RFC 8941 structured field (`max-age="60"` is legal, a bare token may hold any
/// `tchar`), so it is not parsed as one. Directive names are case-insensitive; unknown
/// directives are ignored; when a directive appears twice the first occurrence counts
/// (section 4.2.1). A delta-seconds value that is not a number makes the response stale
/// (`max-age=abc` counts as `max-age=0`, as section 4.2.1 encourages), and one too large for
/// 31 bits is read as 2147483648 (section 1.2.2).
public struct CacheControl: Sendable, Hashable {
    /// `max-age`: seconds the response stays fresh after it was generated.
    public var maxAge: Int?
    /// `s-maxage`: a shared cache's `max-age`; kept, but a private cache ignores it.
    public var sharedMaxAge: Int?
    /// `no-cache`: never answer from a stored response without revalidating it first.
    public var noCache = false
    /// `no-store`: never store the response.
    public var noStore = false
    /// `must-revalidate`: once stale, never answer without a successful revalidation, not even
    /// when the origin is down.
    public var mustRevalidate = false
    /// `immutable` (RFC 8246): the body will not change while fresh, so a fresh response is not
    /// revalidated even on an explicit reload.
    public var immutable = false
    /// `public`.
    public var isPublic = false
    /// `private`: for one user's cache only (this is one).
    public var isPrivate = false
    /// `stale-while-revalidate` (RFC 5861): seconds after going stale during which the stale
    /// response may be answered while one revalidation runs in the background.
    public var staleWhileRevalidate: Int?
    /// `stale-if-error` (RFC 5861): seconds after going stale during which the stale response
    /// may be answered when revalidating fails.
    public var staleIfError: Int?

    /// The value a too-large delta-seconds is read as.
    public static let deltaSecondsCap = 2_147_483_648

    /// No directive.
    public init() {}

    /// Parses every `Cache-Control` line of a message (they form one comma-separated list).
    public init(parsing fieldValues: some Sequence<String>) {
        for line in fieldValues {
            for (name, value) in Self.directives(line) { apply(name, value) }
        }
    }

    /// Parses one `Cache-Control` field value.
    public init(_ fieldValue: String) {
        self.init(parsing: [fieldValue])
    }

    /// The directives as a field value, in a fixed order; empty when there are none.
    public var fieldValue: String {
        var parts: [String] = []
        if isPublic { parts.append("public") }
        if isPrivate { parts.append("private") }
        if noStore { parts.append("no-store") }
        if noCache { parts.append("no-cache") }
        if let maxAge { parts.append("max-age=\(maxAge)") }
        if let sharedMaxAge { parts.append("s-maxage=\(sharedMaxAge)") }
        if mustRevalidate { parts.append("must-revalidate") }
        if immutable { parts.append("immutable") }
        if let staleWhileRevalidate { parts.append("stale-while-revalidate=\(staleWhileRevalidate)") }
        if let staleIfError { parts.append("stale-if-error=\(staleIfError)") }
        return parts.joined(separator: ", ")
    }

    private mutating func apply(_ name: String, _ value: String?) {
        switch name {
        case "max-age": if maxAge == nil { maxAge = Self.deltaSeconds(value) }
        case "s-maxage": if sharedMaxAge == nil { sharedMaxAge = Self.deltaSeconds(value) }
        case "stale-while-revalidate":
            if staleWhileRevalidate == nil { staleWhileRevalidate = Self.deltaSeconds(value) }
        case "stale-if-error": if staleIfError == nil { staleIfError = Self.deltaSeconds(value) }
        // The qualified forms (`no-cache="Set-Cookie"`) name fields a cache must not reuse;
        // this cache keeps no header fields to reuse, so they count as the plain forms, which
        // is the stricter reading.
        case "no-cache": noCache = true
        case "no-store": noStore = true
        case "must-revalidate": mustRevalidate = true
        case "immutable": immutable = true
        case "public": isPublic = true
        case "private": isPrivate = true
        default: break
        }
    }

    /// `delta-seconds = 1*DIGIT`; anything else is 0 (stale), an overflow the cap.
    private static func deltaSeconds(_ value: String?) -> Int {
        guard let value, !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return 0 }
        guard value.utf8.count <= 10, let number = Int(value) else { return deltaSecondsCap }
        return min(number, deltaSecondsCap)
    }

    /// Splits one field value into (lowercased name, unquoted value) pairs. Commas inside a
    /// quoted string do not split; empty list elements are skipped (RFC 9110 5.6.1).
    static func directives(_ line: String) -> [(String, String?)] {
        var result: [(String, String?)] = []
        var name: [UInt8] = []
        var value: [UInt8] = []
        var inValue = false
        var quoted = false
        var escaped = false
        var wasQuoted = false
        // Whether the value so far is only whitespace: a quote there opens a quoted string. A flag,
        // not a scan of the value at each quote, which a hostile field of quotes made quadratic.
        var valueIsBlank = true
        func flush() {
            let trimmedName = String(decoding: name, as: UTF8.self).trimmingOWS().lowercased()
            if !trimmedName.isEmpty {
                let text = String(decoding: value, as: UTF8.self)
                result.append((trimmedName, inValue ? (wasQuoted ? text : text.trimmingOWS()) : nil))
            }
            name = []
            value = []
            inValue = false
            wasQuoted = false
            valueIsBlank = true
        }
        for byte in line.utf8 {
            if quoted {
                if escaped {
                    value.append(byte)
                    escaped = false
                } else if byte == 0x5C {
                    escaped = true
                } else if byte == 0x22 {
                    quoted = false
                } else {
                    value.append(byte)
                }
                continue
            }
            switch byte {
            case 0x2C: flush()
            case 0x3D where !inValue: inValue = true
            case 0x22 where inValue && valueIsBlank:
                value = []
                quoted = true
                wasQuoted = true
                valueIsBlank = false
            default:
                if inValue {
                    value.append(byte)
                    if byte != 0x20, byte != 0x09 { valueIsBlank = false }
                } else {
                    name.append(byte)
                }
            }
        }
        flush()
        return result
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (RFC 9110's optional whitespace).
    func trimmingOWS() -> String {
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
              let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
