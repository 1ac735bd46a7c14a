import Foundation
import HTTPCaching
import Testing

@Suite struct HTTPDateTests {
    @Test func theRFCsExampleRoundTrips() throws {
        let date = try #require(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(date.timeIntervalSince1970 == 784_111_777)
        #expect(HTTPDate.format(date) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test(arguments: [0.0, 951_782_400, 1_700_000_000, 4_102_444_799, -86_400])
    func formatThenParseIsTheSameSecond(_ seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
    }

    /// RFC 9110 5.6.7: "A recipient that parses a timestamp value in an HTTP field MUST accept
    /// all three HTTP-date formats" (attacker round 5: the obsolete two were ignored, so a
    /// client's `If-Modified-Since` in them never got its 304).
    @Test func theThreeFormsOfTheRFCsExampleAreOneSecond() {
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == 784_111_777, "\(text)")
        }
        #expect(HTTPDate.parse("Thu Feb 29 23:59:60 2024")?.timeIntervalSince1970 == 1_709_251_199, "two digits of day, a leap second")
        #expect(ConditionalRequest.notModified(
            ifNoneMatch: nil, ifModifiedSince: "Sunday, 06-Nov-94 08:49:37 GMT", etag: "\"x\"",
            lastModified: Date(timeIntervalSince1970: 784_111_777)
        ))
    }

    /// An RFC 850 date's two-digit year is the latest year with those digits whose date is not
    /// more than 50 years after now, by date: on 1 January 2026, 01-Jan-76 is 2076 (50 years
    /// ahead) and 31-Dec-76 is 1976 (almost 51); 29-Feb-00 is 2000 (2100 is past the horizon
    /// and has no 29 February).
    @Test(arguments: [
        ("Thu, 01 Jan 2026 00:00:00 GMT", "01-Jan-26", "01 Jan 2026"), ("Thu, 01 Jan 2026 00:00:00 GMT", "01-Jan-76", "01 Jan 2076"),
        ("Thu, 01 Jan 2026 00:00:00 GMT", "31-Dec-76", "31 Dec 1976"), ("Thu, 01 Jan 2026 00:00:00 GMT", "01-Jan-77", "01 Jan 1977"),
        ("Thu, 01 Jan 2026 00:00:00 GMT", "31-Dec-99", "31 Dec 1999"), ("Thu, 01 Jan 2026 00:00:00 GMT", "29-Feb-00", "29 Feb 2000"),
        ("Sun, 01 Jan 2090 00:00:00 GMT", "01-Jan-10", "01 Jan 2110"), ("Sun, 01 Jan 2090 00:00:00 GMT", "01-Jan-40", "01 Jan 2140"),
        ("Sun, 01 Jan 2090 00:00:00 GMT", "02-Jan-40", "02 Jan 2040"), ("Sun, 01 Jan 2090 00:00:00 GMT", "01-Jan-41", "01 Jan 2041"),
    ])
    func anRFC850YearIsTheLatestNotMoreThanFiftyYearsAhead(now: String, written: String, read: String) throws {
        let clock = try #require(HTTPDate.parse(now))
        let date = try #require(HTTPDate.parse("Monday, \(written) 00:00:00 GMT", now: clock))
        #expect(HTTPDate.format(date).contains(" \(read) 00:00:00 GMT"), "\(HTTPDate.format(date))")
    }

    @Test(arguments: [
        "Sun, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 UTC", "Sundy, 06-Nov-94 08:49:37 GMT", "Sunday, 6-Nov-94 08:49:37 GMT",
        "Sunday, 06 Nov 1994 08:49:37 GMT", "Sun Nov 6 08:49:37 1994", "Sun Nov  6 08:49:37 94", "Sun Nov  6 08:49:37  1994",
        "Sun Nov 31 08:49:37 1994", "Sun Nov  6 8:49:37 1994", "Sun Nov 06 08:49:37 GMT", ",", "Sunday,",
        "0", "", "Sun, 31 Feb 1994 08:49:37 GMT",
        "Sun, 29 Feb 1900 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
        "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nox 1994 08:49:37 GMT", "Sun, 0x Nov 1994 08:49:37 GMT",
        // Year 0: before the years a date may be kept in (found by `make fuzz`).
        "Fri, 31 Dec 0000 23:59:59 GMT",
    ])
    func anythingButAnHTTPDateIsNil(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func leapDaysParse() {
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 00:00:00 GMT")?.timeIntervalSince1970 == 951_782_400)
    }

    @Test func ifNoneMatchDecidesAloneThenIfModifiedSince() {
        let modified = Date(timeIntervalSince1970: 784_111_777)
        let etag = "\"abc\""
        #expect(ConditionalRequest.notModified(ifNoneMatch: "\"x\", \"abc\"", ifModifiedSince: nil, etag: etag, lastModified: modified))
        #expect(ConditionalRequest.notModified(ifNoneMatch: "W/\"abc\"", ifModifiedSince: nil, etag: etag, lastModified: modified))
        #expect(ConditionalRequest.notModified(ifNoneMatch: "*", ifModifiedSince: nil, etag: etag, lastModified: modified))
        #expect(!ConditionalRequest.notModified(ifNoneMatch: "\"x\"", ifModifiedSince: "Sun, 06 Nov 1994 08:49:37 GMT", etag: etag, lastModified: modified))
        #expect(ConditionalRequest.notModified(ifNoneMatch: nil, ifModifiedSince: "Sun, 06 Nov 1994 08:49:37 GMT", etag: etag, lastModified: modified))
        #expect(!ConditionalRequest.notModified(ifNoneMatch: nil, ifModifiedSince: "Sun, 06 Nov 1994 08:49:36 GMT", etag: etag, lastModified: modified))
        #expect(!ConditionalRequest.notModified(ifNoneMatch: nil, ifModifiedSince: "garbage", etag: etag, lastModified: modified))
    }
}

/// `HTTPDate.format` is total: a date no IMF-fixdate can carry (read from a damaged store) is held
/// to the years 1 to 9999 instead of trapping in an integer conversion, and a request is never made
/// conditional on one.
@Suite struct HTTPDateRangeTests {
    @Test func formatIsTotal() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 1e19)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .infinity)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .nan)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -1e19)) == "Mon, 01 Jan 0001 00:00:00 GMT")
        #expect(HTTPDate.format(.distantPast) == "Mon, 01 Jan 0001 00:00:00 GMT")
        #expect(HTTPDate.parse(HTTPDate.format(Date(timeIntervalSince1970: HTTPDate.latest)))?.timeIntervalSince1970 == HTTPDate.latest)
        #expect(HTTPDate.parse(HTTPDate.format(Date(timeIntervalSince1970: HTTPDate.earliest)))?.timeIntervalSince1970 == HTTPDate.earliest)
    }

    @Test func representableIsTheYears1To9999() {
        #expect(HTTPDate.isRepresentable(Date(timeIntervalSince1970: HTTPDate.earliest)))
        #expect(HTTPDate.isRepresentable(Date(timeIntervalSince1970: HTTPDate.latest + 0.5)))
        #expect(!HTTPDate.isRepresentable(Date(timeIntervalSince1970: HTTPDate.latest + 1)))
        #expect(!HTTPDate.isRepresentable(Date(timeIntervalSince1970: HTTPDate.earliest - 1)))
        #expect(!HTTPDate.isRepresentable(Date(timeIntervalSince1970: .nan)))
    }

    @Test func aLastModifiedNoHTTPDateCanCarryIsNotSent() {
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        var headers = CacheHeaders(etag: "\"e\"", lastModified: Date(timeIntervalSince1970: 1e19), requestTime: at, responseTime: at)
        #expect(headers.conditionalFields.map(\.name) == ["If-None-Match"])
        headers.etag = nil
        #expect(headers.conditionalFields.isEmpty)
        #expect(!headers.hasValidators)
    }
}
