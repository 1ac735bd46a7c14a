import Foundation
import HTTPCaching
import Testing

/// RFC 9111's freshness rules and RFC 5861's windows, one row each, against a fixed clock:
/// the response arrives at `t0`; each row says what the cache may do `at` seconds later.
@Suite struct FreshnessTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var fields: [(name: String, value: String)]
        /// Seconds between sending the request and `t0`, when the response arrived.
        var delay: TimeInterval = 0
        var at: TimeInterval
        var state: Freshness.State
        var testDescription: String { name }
    }

    static func date(_ offset: TimeInterval) -> String { HTTPDate.format(t0.addingTimeInterval(offset)) }

    static let rows: [Row] = [
        // 4.2.1: max-age.
        Row(name: "max-age, inside", fields: [("Date", date(0)), ("Cache-Control", "max-age=60")], at: 30, state: .fresh),
        Row(name: "max-age, at the end", fields: [("Date", date(0)), ("Cache-Control", "max-age=60")], at: 60, state: .stale),
        // 4.2.3: Age from a cache on the way counts, plus the response delay.
        Row(name: "Age counts", fields: [("Date", date(0)), ("Age", "50"), ("Cache-Control", "max-age=60")], at: 5, state: .fresh),
        Row(name: "Age counts, past", fields: [("Date", date(0)), ("Age", "50"), ("Cache-Control", "max-age=60")], at: 15, state: .stale),
        Row(name: "apparent age from Date", fields: [("Date", date(-100)), ("Cache-Control", "max-age=60")], at: 0, state: .stale),
        Row(name: "Date in the future is age 0", fields: [("Date", date(500)), ("Cache-Control", "max-age=60")], at: 59, state: .fresh),
        Row(name: "response delay adds to Age", fields: [("Date", date(0)), ("Age", "20"), ("Cache-Control", "max-age=60")], delay: 30, at: 5, state: .fresh),
        Row(name: "response delay adds to Age, past", fields: [("Date", date(0)), ("Age", "20"), ("Cache-Control", "max-age=60")], delay: 30, at: 15, state: .stale),
        // 4.2.1: Expires relative to Date, max-age wins over it, an invalid one is expired.
        Row(name: "Expires", fields: [("Date", date(0)), ("Expires", date(120))], at: 100, state: .fresh),
        Row(name: "Expires, past", fields: [("Date", date(0)), ("Expires", date(120))], at: 130, state: .stale),
        Row(name: "Expires against a Date that is behind", fields: [("Date", date(-1000)), ("Expires", date(-880))], at: 0, state: .stale),
        Row(name: "max-age wins over Expires", fields: [("Date", date(0)), ("Expires", date(3600)), ("Cache-Control", "max-age=10")], at: 20, state: .stale),
        Row(name: "invalid Expires is expired", fields: [("Date", date(0)), ("Expires", "0")], at: 0, state: .stale),
        // 4.2.2: heuristic freshness, 10% of the time since Last-Modified, at most 24 hours.
        Row(name: "heuristic", fields: [("Date", date(0)), ("Last-Modified", date(-1000))], at: 99, state: .fresh),
        Row(name: "heuristic, past", fields: [("Date", date(0)), ("Last-Modified", date(-1000))], at: 101, state: .stale),
        Row(name: "heuristic cap", fields: [("Date", date(0)), ("Last-Modified", date(-100 * 86_400))], at: 86_399, state: .fresh),
        Row(name: "heuristic cap, past", fields: [("Date", date(0)), ("Last-Modified", date(-100 * 86_400))], at: 86_401, state: .stale),
        Row(name: "no freshness at all", fields: [("Date", date(0)), ("ETag", "\"a\"")], at: 0, state: .stale),
        // 5.2.2: no-cache and must-revalidate.
        Row(name: "no-cache", fields: [("Date", date(0)), ("Cache-Control", "no-cache, max-age=3600")], at: 0, state: .mustRevalidate),
        Row(name: "must-revalidate while fresh", fields: [("Date", date(0)), ("Cache-Control", "max-age=60, must-revalidate")], at: 30, state: .fresh),
        Row(name: "must-revalidate once stale", fields: [("Date", date(0)), ("Cache-Control", "max-age=60, must-revalidate")], at: 90, state: .mustRevalidate),
        // RFC 5861 3: stale-while-revalidate.
        Row(name: "stale-while-revalidate, inside", fields: [("Date", date(0)), ("Cache-Control", "max-age=60, stale-while-revalidate=30")], at: 70, state: .staleWhileRevalidate),
        Row(name: "stale-while-revalidate, past", fields: [("Date", date(0)), ("Cache-Control", "max-age=60, stale-while-revalidate=30")], at: 95, state: .stale),
        // 5.2: the grammar.
        Row(name: "names are case-insensitive", fields: [("Date", date(0)), ("cache-control", "Max-Age=60")], at: 30, state: .fresh),
        Row(name: "quoted value", fields: [("Date", date(0)), ("Cache-Control", "max-age=\"60\"")], at: 30, state: .fresh),
        Row(name: "invalid max-age is stale", fields: [("Date", date(0)), ("Cache-Control", "max-age=abc")], at: 0, state: .stale),
        Row(name: "unknown directives ignored", fields: [("Date", date(0)), ("Cache-Control", "foo=\"a, b\", bar, max-age=60")], at: 30, state: .fresh),
        Row(name: "first of two max-ages", fields: [("Date", date(0)), ("Cache-Control", "max-age=60"), ("Cache-Control", "max-age=10")], at: 30, state: .fresh),
        Row(name: "s-maxage is for shared caches", fields: [("Date", date(0)), ("Cache-Control", "s-maxage=600, max-age=10")], at: 30, state: .stale),
        Row(name: "too large max-age is capped", fields: [("Date", date(0)), ("Cache-Control", "max-age=99999999999999999999")], at: 2_000_000_000, state: .fresh),
    ]

    @Test(arguments: rows) func state(_ row: Row) {
        let headers = CacheHeaders(fields: row.fields, requestTime: Self.t0.addingTimeInterval(-row.delay), responseTime: Self.t0)
        #expect(headers.freshness(at: Self.t0.addingTimeInterval(row.at)).state == row.state)
    }

    struct ErrorRow: CustomTestStringConvertible, Sendable {
        var name: String
        var cacheControl: String
        var at: TimeInterval
        var unreachable: Bool
        var allowed: Bool
        var testDescription: String { name }
    }

    static let errorRows: [ErrorRow] = [
        ErrorRow(name: "5xx inside stale-if-error", cacheControl: "max-age=60, stale-if-error=100", at: 120, unreachable: false, allowed: true),
        ErrorRow(name: "5xx past stale-if-error", cacheControl: "max-age=60, stale-if-error=100", at: 170, unreachable: false, allowed: false),
        ErrorRow(name: "5xx without stale-if-error", cacheControl: "max-age=60", at: 61, unreachable: false, allowed: false),
        ErrorRow(name: "unreachable origin (RFC 9111 4.2.4)", cacheControl: "max-age=60", at: 100_000, unreachable: true, allowed: true),
        ErrorRow(name: "must-revalidate forbids it", cacheControl: "max-age=60, must-revalidate, stale-if-error=100", at: 120, unreachable: true, allowed: false),
        ErrorRow(name: "no-cache forbids it", cacheControl: "no-cache, stale-if-error=100", at: 1, unreachable: true, allowed: false),
    ]

    @Test(arguments: errorRows) func staleOnError(_ row: ErrorRow) {
        let headers = CacheHeaders(fields: [("Date", Self.date(0)), ("Cache-Control", row.cacheControl)], requestTime: Self.t0, responseTime: Self.t0)
        #expect(headers.freshness(at: Self.t0.addingTimeInterval(row.at)).allowsStaleAnswer(originUnreachable: row.unreachable) == row.allowed)
    }

    @Test func aNotModifiedRefreshesTheStoredHeaders() {
        let stored = CacheHeaders(
            fields: [("Date", Self.date(0)), ("ETag", "\"a\""), ("Cache-Control", "max-age=60")],
            requestTime: Self.t0, responseTime: Self.t0
        )
        #expect(stored.freshness(at: Self.t0.addingTimeInterval(100)).state == .stale)
        #expect(stored.conditionalFields.map(\.name) == ["If-None-Match"])
        let later = Self.t0.addingTimeInterval(100)
        let refreshed = stored.updated(withNotModified: [("Date", Self.date(100))], requestTime: later, responseTime: later)
        #expect(refreshed.etag == "\"a\"")
        #expect(refreshed.cacheControl.maxAge == 60)
        #expect(refreshed.freshness(at: later.addingTimeInterval(30)).state == .fresh)
        // A 304 with its own Cache-Control replaces the stored one.
        let longer = stored.updated(withNotModified: [("Cache-Control", "max-age=600")], requestTime: later, responseTime: later)
        #expect(longer.freshness(at: later.addingTimeInterval(300)).state == .fresh)
    }

    @Test func conditionalFieldsNameBothValidators() {
        let headers = CacheHeaders(
            fields: [("ETag", "W/\"v1\""), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")],
            requestTime: Self.t0, responseTime: Self.t0
        )
        #expect(headers.conditionalFields.map(\.value) == ["W/\"v1\"", "Sun, 06 Nov 1994 08:49:37 GMT"])
        #expect(CacheHeaders(fields: [], requestTime: Self.t0, responseTime: Self.t0).hasValidators == false)
    }

    @Test func cacheControlRoundTrips() {
        let control = CacheControl("public, max-age=60, immutable, stale-while-revalidate=5, stale-if-error=10, no-store")
        #expect(CacheControl(control.fieldValue) == control)
        #expect(control.noStore && control.immutable && control.isPublic)
    }

    /// A quote opens a quoted string only where the value is blank so far, and a field of tens of
    /// thousands of quotes (as a hostile origin sends, under NIO's 80 KB field limit) reads as
    /// one long unquoted value: a number it is not, so the answer is stale. Each quote used to
    /// re-scan the value: the 78 KB field took 82 s in a debug build; this 300 KB one (a parser
    /// takes any length) would take about twenty minutes, past the time limit, and takes 0.05 s.
    @Test(.timeLimit(.minutes(3))) func quotesOpenAQuotedValueOnlyWhereTheValueIsBlank() {
        #expect(CacheControl("max-age= \t\"60\"").maxAge == 60)
        #expect(CacheControl("max-age=6\"0\"").maxAge == 0)
        #expect(CacheControl("max-age=\"60\"\"1\"").maxAge == 0, "a second quoted string does not start the value again")
        #expect(CacheControl("no-store=\"a, max-age=60\", max-age=5").maxAge == 5)
        let hostile = CacheControl("max-age=" + String(repeating: " ", count: 150_000) + "x" + String(repeating: "\"", count: 150_000) + ", public")
        #expect(hostile.maxAge == 0)
        #expect(hostile.isPublic)
    }
}

/// The validators a response leaves, as the cache will send them back.
@Suite struct CacheHeadersValidatorTests {
    /// An `ETag` that cannot be sent back as `If-None-Match` is not kept: an empty one made the
    /// cache send an empty `If-None-Match` (found by `make fuzz`). An unquoted tag is kept, as
    /// browsers keep it; a 304 carrying an unusable tag leaves the stored one.
    @Test func anETagThatCannotBeSentBackIsIgnored() {
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        for value in ["", "  ", "\"a\u{1}b\"", "\u{7F}"] {
            let headers = CacheHeaders(fields: [("ETag", value)], requestTime: at, responseTime: at)
            #expect(headers.etag == nil, "\(Array(value.utf8))")
            #expect(headers.conditionalFields.isEmpty)
        }
        #expect(CacheHeaders(fields: [("ETag", " abc ")], requestTime: at, responseTime: at).etag == "abc")
        let stored = CacheHeaders(fields: [("ETag", "W/\"v1\"")], requestTime: at, responseTime: at)
        #expect(stored.updated(withNotModified: [("ETag", "")], requestTime: at, responseTime: at).etag == "W/\"v1\"")
        #expect(stored.updated(withNotModified: [("ETag", "\"v2\"")], requestTime: at, responseTime: at).etag == "\"v2\"")
    }
}
