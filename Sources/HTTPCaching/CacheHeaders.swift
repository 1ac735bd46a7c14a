public import Foundation

/// What a cache keeps of an origin's response besides its body: the validators (`ETag`,
/// `Last-Modified`), the freshness fields (`Date`, `Age`, `Expires`, `Cache-Control`) and when
/// the request was sent and the response received, which RFC 9111's age calculation needs.
///
/// Dates are whole seconds, as HTTP carries them. A value type; `Sendable`.
public struct CacheHeaders: Sendable, Hashable {
    /// The entity tag, quoted as sent (`"abc"` or `W/"abc"`).
    public var etag: String?
    /// `Last-Modified`.
    public var lastModified: Date?
    /// `Date`: when the origin generated the response.
    public var date: Date?
    /// `Age` in seconds, as a shared cache on the way reported it.
    public var age: Int?
    /// `Expires`; `Date.distantPast` when the field was present but not a date (RFC 9111 5.3:
    /// such a response is already expired).
    public var expires: Date?
    /// `Cache-Control`.
    public var cacheControl: CacheControl
    /// When the request that got this response was sent, by the cache's clock.
    public var requestTime: Date
    /// When the response arrived, by the cache's clock.
    public var responseTime: Date

    /// Creates headers from parts.
    public init(
        etag: String? = nil, lastModified: Date? = nil, date: Date? = nil, age: Int? = nil, expires: Date? = nil,
        cacheControl: CacheControl = .init(), requestTime: Date, responseTime: Date
    ) {
        self.etag = etag
        self.lastModified = lastModified
        self.date = date
        self.age = age
        self.expires = expires
        self.cacheControl = cacheControl
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// Reads the fields of a response. Names are compared case-insensitively; a date that does
    /// not parse is ignored (an `Expires` that does not parse means already expired).
    /// - Parameters:
    ///   - fields: the response's header fields, in order.
    ///   - requestTime: when the request was sent.
    ///   - responseTime: when the response arrived.
    public init(fields: some Sequence<(String, String)>, requestTime: Date, responseTime: Date) {
        self.init(requestTime: requestTime, responseTime: responseTime)
        update(with: fields, replacingCacheControl: true)
    }

    /// The stored headers updated by a `304 Not Modified` (RFC 9111 4.3.4): each field the 304
    /// carries replaces the stored one, and the exchange's times become the entry's.
    public func updated(
        withNotModified fields: some Sequence<(String, String)>, requestTime: Date, responseTime: Date
    ) -> CacheHeaders {
        var updated = self
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        // The stored Age and Date described the old response; the 304 is the new one.
        updated.age = nil
        updated.date = nil
        updated.update(with: fields, replacingCacheControl: false)
        return updated
    }

    private mutating func update(with fields: some Sequence<(String, String)>, replacingCacheControl: Bool) {
        var cacheControlLines: [String] = []
        for (name, value) in fields {
            switch name.lowercased() {
            case "etag": if let tag = Self.entityTag(value.trimmingOWS()) { etag = tag }
            case "last-modified": if let parsed = HTTPDate.parse(value.trimmingOWS()) { lastModified = parsed }
            case "date": if let parsed = HTTPDate.parse(value.trimmingOWS()) { date = parsed }
            case "age":
                let text = value.trimmingOWS()
                if !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                    age = text.utf8.count > 10 ? CacheControl.deltaSecondsCap : min(Int(text) ?? 0, CacheControl.deltaSecondsCap)
                }
            case "expires": expires = HTTPDate.parse(value.trimmingOWS()) ?? .distantPast
            case "cache-control": cacheControlLines.append(value)
            default: break
            }
        }
        if replacingCacheControl || !cacheControlLines.isEmpty {
            cacheControl = CacheControl(parsing: cacheControlLines)
        }
    }

    /// `text` when it can be sent back in `If-None-Match`, else `nil`: an `ETag` field that is
    /// empty, or holds a control character (no valid field value does), is ignored. The tag
    /// should be `"abc"` or `W/"abc"` (RFC 9110 8.8.3); an unquoted one is kept as sent, as
    /// browsers keep it, since origins that send it expect it back.
    public static func entityTag(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 == 0x09 || (0x20...0x7E).contains($0) || $0 >= 0x80 }) else { return nil }
        return text
    }

    /// The fields that make a request conditional on this response (RFC 9110 13.1): the entity
    /// tag as `If-None-Match`, and `Last-Modified` as `If-Modified-Since`. Empty when the
    /// response had neither, and then it cannot be revalidated, only fetched again.
    public var conditionalFields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        if let etag { fields.append(("If-None-Match", etag)) }
        // A date no IMF-fixdate can carry (read from a damaged store) is not sent.
        if let lastModified, HTTPDate.isRepresentable(lastModified) {
            fields.append(("If-Modified-Since", HTTPDate.format(lastModified)))
        }
        return fields
    }

    /// Whether a request can be made conditional on this response.
    public var hasValidators: Bool { etag != nil || lastModified.map(HTTPDate.isRepresentable) == true }

    /// Freshness at `now`, by RFC 9111 section 4.2 for a private cache.
    public func freshness(at now: Date) -> Freshness {
        Freshness(self, now: now)
    }

    public static func == (lhs: CacheHeaders, rhs: CacheHeaders) -> Bool {
        lhs.etag == rhs.etag && lhs.lastModified == rhs.lastModified && lhs.date == rhs.date && lhs.age == rhs.age
            && lhs.expires == rhs.expires && lhs.cacheControl == rhs.cacheControl
            && lhs.requestTime == rhs.requestTime && lhs.responseTime == rhs.responseTime
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(etag)
        hasher.combine(responseTime)
    }
}
