import Foundation
import HTTPCaching

/// The `cacheHeaders` metadata record: what the origin said about caching an entry, parsed once
/// when the answer arrived and kept in binary, so a disk hit reads it without parsing a header.
///
/// ```
/// size  field
///    1  layout version (1); a record of another version is ignored: no headers, a stale entry
///    1  zero
///    2  flags: 1 no-cache, 2 no-store, 4 must-revalidate, 8 immutable, 16 public, 32 private
///  8x4  max-age, s-maxage, stale-while-revalidate, stale-if-error: Int64 seconds, -1 absent
///    8  Age: Int64 seconds, -1 absent
///  8x5  Date, Last-Modified, Expires, request time, response time: Float64 seconds since
///       1970, within the years 1 to 9999 (`HTTPDate.earliest...HTTPDate.latest`); NaN absent
///       (the two times are always present)
///    2  ETag length E (at most 1024; a longer tag is not kept: E is 0)
///    E  ETag, UTF-8, quoted as sent
/// ```
extension DiskEntry {
    static let cacheHeadersLayout: UInt8 = 1
    static let cacheHeadersFixedSize = 4 + 8 * 5 + 8 * 5 + 2
    static let etagLimit = 1024

    static func encodeCacheHeaders(_ headers: CacheHeaders) -> [UInt8] {
        let control = headers.cacheControl
        var out: [UInt8] = [cacheHeadersLayout, 0]
        var flags: UInt16 = 0
        for (bit, on) in [control.noCache, control.noStore, control.mustRevalidate, control.immutable, control.isPublic, control.isPrivate].enumerated() where on {
            flags |= 1 << UInt16(bit)
        }
        append(flags, to: &out)
        for seconds in [control.maxAge, control.sharedMaxAge, control.staleWhileRevalidate, control.staleIfError, headers.age] {
            append(Int64(seconds ?? -1), to: &out)
        }
        for date in [headers.date, headers.lastModified, headers.expires, headers.requestTime, headers.responseTime] {
            // Held to the years an HTTP date can carry (`Expires` of a date that did not parse is
            // `Date.distantPast`, before year 1): the reader refuses anything outside them.
            let seconds = date.map { min(max($0.timeIntervalSince1970, HTTPDate.earliest), HTTPDate.latest) } ?? .nan
            append(seconds.bitPattern, to: &out)
        }
        // A longer tag is not kept (the entry then revalidates by date, or is fetched again):
        // cut, it would be another tag, or not even UTF-8.
        let etag = headers.etag.map { Array($0.utf8) }.flatMap { $0.count <= etagLimit ? $0 : nil } ?? []
        append(UInt16(etag.count), to: &out)
        out += etag
        return out
    }

    /// Reads the record in `bytes[start..<end]`. A record of another layout version is
    /// answered as no headers (the entry is then stale, and fetched again), not as damage.
    static func decodeCacheHeaders(_ bytes: [UInt8], from start: Int, to end: Int) -> Result<CacheHeaders?, Problem> {
        guard end - start >= 1 else { return .failure(.badMetadata("an empty cache header record")) }
        guard bytes[start] == cacheHeadersLayout else { return .success(nil) }
        guard end - start >= cacheHeadersFixedSize else { return .failure(.badMetadata("a cache header record is cut off")) }
        var offset = start + 2
        let flags = read(UInt16.self, bytes, at: offset)
        offset += 2
        var seconds: [Int?] = []
        for _ in 0..<5 {
            let value = Int64(bitPattern: read(UInt64.self, bytes, at: offset))
            offset += 8
            guard value >= -1, value <= Int64(CacheControl.deltaSecondsCap) else {
                return .failure(.badMetadata("a cache duration of \(value) s"))
            }
            seconds.append(value == -1 ? nil : Int(value))
        }
        var dates: [Date?] = []
        for _ in 0..<5 {
            let value = Double(bitPattern: read(UInt64.self, bytes, at: offset))
            offset += 8
            // NaN is "absent"; anything else must be a second of the years 1 to 9999, so every
            // use (HTTP dates, freshness arithmetic) stays in range.
            guard value.isNaN || (value >= HTTPDate.earliest && value <= HTTPDate.latest) else {
                return .failure(.badMetadata("a date of \(value) s since 1970, outside the years 1 to 9999"))
            }
            dates.append(value.isNaN ? nil : Date(timeIntervalSince1970: value))
        }
        let etagLength = Int(read(UInt16.self, bytes, at: offset))
        offset += 2
        guard etagLength <= etagLimit, etagLength == end - offset else {
            return .failure(.badMetadata("an ETag of \(etagLength) bytes in a record with \(end - offset) left"))
        }
        guard let etag = String(validating: bytes[offset..<end], as: UTF8.self) else {
            return .failure(.badMetadata("an ETag that is not UTF-8"))
        }
        guard let requestTime = dates[3], let responseTime = dates[4] else {
            return .failure(.badMetadata("a cache header record without its exchange's times"))
        }
        var control = CacheControl()
        control.noCache = flags & 1 != 0
        control.noStore = flags & 2 != 0
        control.mustRevalidate = flags & 4 != 0
        control.immutable = flags & 8 != 0
        control.isPublic = flags & 16 != 0
        control.isPrivate = flags & 32 != 0
        control.maxAge = seconds[0]
        control.sharedMaxAge = seconds[1]
        control.staleWhileRevalidate = seconds[2]
        control.staleIfError = seconds[3]
        // A tag that could not be sent back (a control character, planted or from an older
        // build) is dropped, as it would have been on arrival: sent, the request would fail.
        return .success(CacheHeaders(
            etag: CacheHeaders.entityTag(etag), lastModified: dates[1], date: dates[0], age: seconds[4], expires: dates[2],
            cacheControl: control, requestTime: requestTime, responseTime: responseTime
        ))
    }
}
