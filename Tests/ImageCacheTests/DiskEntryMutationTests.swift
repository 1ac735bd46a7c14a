import CXXHash
import Foundation
import HTTPCaching
@testable import ImageCache
import Testing
import TestSupport

/// The entry decoder against damage: every header field, every length, random bytes anywhere,
/// every truncation. Each damaged entry either decodes to the original or is rejected with a
/// typed problem; none traps (a trap would end the test process). `make fuzz` runs the same
/// decoder under libFuzzer.
@Suite struct DiskEntryMutationTests {
    /// Entries of every shape: empty and large payloads, long keys, with and without pixel size.
    static let originals: [(key: String, image: Image)] = [
        ("http://127.0.0.1/gallery/image?5#thumbnail-200-png", Image(data: Array(0..<200).map { UInt8($0) }, contentType: "image/png", pixelSize: .init(width: 111, height: 200))),
        ("k", Image(data: [], contentType: "application/octet-stream")),
        ("http://example.test/" + String(repeating: "long/", count: 200), Image(data: [0xFF], contentType: "image/webp")),
        ("x", Image(data: (0..<4_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }, contentType: "image/jpeg", pixelSize: .init(width: 0, height: 0))),
        ("30k", Image(data: (0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }, contentType: "image/png", pixelSize: .init(width: 360, height: 650))),
        ("http", Image(
            data: [1, 2, 3, 4], contentType: "image/png", cacheHeaders: headers,
            originalSHA256: SHA256Hex.digest([1, 2, 3, 4])
        )),
    ]

    /// Headers with every field set.
    static let headers = CacheHeaders(
        fields: [
            ("ETag", "W/\"v1\""), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"), ("Date", "Mon, 07 Nov 1994 08:49:37 GMT"),
            ("Age", "12"), ("Expires", "Tue, 08 Nov 1994 08:49:37 GMT"),
            ("Cache-Control", "public, private, max-age=60, s-maxage=120, no-cache, no-store, must-revalidate, immutable, stale-while-revalidate=5, stale-if-error=600"),
        ],
        requestTime: Date(timeIntervalSince1970: 784_200_000.25), responseTime: Date(timeIntervalSince1970: 784_200_001.5)
    )

    enum Verdict { case original, rejected }

    /// Decodes `bytes` as the entry of `key` and says how it ended; anything else is a failure.
    static func verdict(_ bytes: [UInt8], key: String, original: Image) -> Verdict? {
        switch DiskEntry.decode(bytes, key: key) {
        case let .success(image): image == original ? .original : nil
        case .failure: .rejected
        }
    }

    @Test func everyShapeRoundTrips() {
        for (key, image) in Self.originals {
            #expect(DiskEntry.decode(DiskEntry.encode(image, key: key), key: key) == .success(image))
            let decoded = try? DiskEntry.decode(DiskEntry.encode(image, key: key), key: key).get()
            #expect(decoded?.cacheHeaders == image.cacheHeaders)
            #expect(decoded?.originalSHA256 == image.originalSHA256)
            #expect(DiskEntry.decode(DiskEntry.encode(image, key: key), key: key + "!") == .failure(.otherKey))
        }
    }

    /// An origin's ETag longer than the record keeps (1024 bytes) is not kept, and the entry
    /// is: cut at 1024 bytes (a quote and 511 two-byte characters, then the first byte of the
    /// next), this one ended inside a character, and the entry was rejected as damaged on every
    /// read (deleted, and fetched again, for as long as the origin sent it).
    @Test func anETagTooLongToKeepIsDroppedAndTheEntryReadsBack() throws {
        let etag = "\"" + String(repeating: "é", count: 600) + "\""
        let headers = CacheHeaders(fields: [("ETag", etag), ("Cache-Control", "max-age=60")], requestTime: Self.headers.requestTime, responseTime: Self.headers.responseTime)
        #expect(headers.etag == etag)
        let image = Image(data: [1, 2, 3], contentType: "image/png", cacheHeaders: headers)
        let decoded = try DiskEntry.decode(DiskEntry.encode(image, key: "k"), key: "k").get()
        #expect(decoded.data == image.data)
        #expect(decoded.cacheHeaders?.etag == nil)
        #expect(decoded.cacheHeaders?.cacheControl.maxAge == 60)
    }

    /// A stored tag that could not be sent back (a control character: planted, or kept by an
    /// older build) is dropped when read, as it would be on arrival: sent as `If-None-Match`,
    /// every revalidation failed before the request left, and the stale entry was answered as if
    /// the origin were down (cold review).
    @Test func aStoredETagThatCannotBeSentBackIsDroppedOnRead() throws {
        var headers = Self.headers
        headers.etag = "\"a\r\nX-Injected: 1\""
        let image = Image(data: [1, 2, 3], contentType: "image/png", cacheHeaders: headers)
        let decoded = try DiskEntry.decode(DiskEntry.encode(image, key: "k"), key: "k").get()
        #expect(decoded.cacheHeaders?.etag == nil)
        #expect(decoded.cacheHeaders?.conditionalFields.map(\.name) == ["If-Modified-Since"])
    }

    @Test func everyTruncationIsRejected() {
        for (key, image) in Self.originals.prefix(4) {
            let bytes = DiskEntry.encode(image, key: key)
            for length in 0..<bytes.count {
                #expect(Self.verdict(Array(bytes[..<length]), key: key, original: image) == .rejected)
            }
            #expect(Self.verdict(bytes + [0], key: key, original: image) == .rejected)
        }
    }

    /// 100,000 and more damaged entries: single and multiple byte flips anywhere, every byte
    /// of the header set to every interesting value, truncations and extensions.
    @Test func aHundredThousandDamagedEntriesAreEachOriginalOrRejected() {
        var random = SplitMix(seed: 2_026)
        var tried = 0
        for (key, image) in Self.originals {
            let bytes = DiskEntry.encode(image, key: key)
            // Bytes that came back to the original (two flips undoing each other) must decode to
            // it; any other change must be rejected.
            func check(_ damaged: [UInt8], _ key: String, _ image: Image) {
                tried += 1
                let verdict = Self.verdict(damaged, key: key, original: image)
                if damaged == bytes {
                    #expect(verdict == .original)
                } else if verdict != .rejected {
                    Issue.record("a damaged entry was accepted (\(damaged.count) of \(bytes.count) bytes)")
                }
            }
            // Every header byte (magic, version, lengths, reserved) to each interesting value.
            for offset in 0..<DiskEntry.headerSize {
                for value: UInt8 in [0x00, 0x01, 0x02, 0x7F, 0x80, 0xFE, 0xFF] where value != bytes[offset] {
                    var damaged = bytes
                    damaged[offset] = value
                    check(damaged, key, image)
                }
            }
            // Random damage anywhere: 1 to 4 bytes changed.
            for _ in 0..<18_000 {
                var damaged = bytes
                for _ in 0...(random.next() % 4) {
                    let offset = Int(random.next() % UInt64(damaged.count))
                    damaged[offset] ^= UInt8(truncatingIfNeeded: random.next() | 1)
                }
                check(damaged, key, image)
            }
            // Random truncations and extensions.
            for _ in 0..<2_000 {
                let length = Int(random.next() % UInt64(bytes.count + 64))
                let damaged = length <= bytes.count ? Array(bytes[..<length]) : bytes + (0..<(length - bytes.count)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                check(damaged, key, image)
            }
        }
        #expect(tried >= 100_000, "only \(tried) entries were tried")
    }

    /// Damage that also fixes the checksum up (as a buggy writer or a deliberate forger could):
    /// the lengths and metadata are still checked against the file, so no value traps.
    @Test func resealedEntriesWithAnyLengthsNeverTrap() {
        var random = SplitMix(seed: 9_421)
        let extremes: [UInt64] = [0, 1, 6, 7, 8, 31, 32, 33, 255, 65_535, 1 << 31, (1 << 32) - 1, 1 << 32, UInt64(Int.max), UInt64(Int.max) + 1, .max]
        var tried = 0
        for (key, image) in Self.originals {
            let bytes = DiskEntry.encode(image, key: key)
            let keyEnd = DiskEntry.headerSize + key.utf8.count
            // Each length field to each extreme, and the first metadata record's tag and length.
            let fields: [(offset: Int, size: Int)] = [(8, 4), (12, 4), (16, 8), (keyEnd, 2), (keyEnd + 2, 4)]
            for field in fields {
                for value in extremes + (0..<200).map({ _ in random.next() }) {
                    var damaged = bytes
                    for byte in 0..<field.size { damaged[field.offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
                    Self.reseal(&damaged)
                    if case let .success(decoded) = DiskEntry.decode(damaged, key: key) {
                        // Accepted only when it still describes bytes that are really there.
                        #expect(decoded.data.count <= damaged.count && decoded.contentType.utf8.count <= DiskEntry.contentTypeLimit)
                    }
                    tried += 1
                }
            }
        }
        #expect(tried > 5_000)
    }

    /// Records of a later version are skipped; a record that claims more bytes than remain is
    /// rejected, as are two content types and a missing one.
    @Test func metadataRecordsAreCheckedAndUnknownOnesSkipped() {
        let image = Image(data: [1, 2, 3], contentType: "image/png")
        func entry(_ records: [(tag: UInt16, value: [UInt8])]) -> [UInt8] {
            var metadata: [UInt8] = []
            for record in records {
                metadata += withUnsafeBytes(of: record.tag.littleEndian) { Array($0) }
                metadata += withUnsafeBytes(of: UInt32(record.value.count).littleEndian) { Array($0) }
                metadata += record.value
            }
            var bytes = Array("EMJC".utf8) + [2, 0, 0, 0]
            bytes += withUnsafeBytes(of: UInt32(1).littleEndian) { Array($0) }
            bytes += withUnsafeBytes(of: UInt32(metadata.count).littleEndian) { Array($0) }
            bytes += withUnsafeBytes(of: UInt64(3).littleEndian) { Array($0) }
            bytes += [UInt8](repeating: 0, count: 8)
            bytes += Array("k".utf8) + metadata + [1, 2, 3]
            bytes += [UInt8](repeating: 0, count: 8)
            Self.reseal(&bytes)
            return bytes
        }
        let png = Array("image/png".utf8)
        #expect(DiskEntry.decode(entry([(1, png), (99, [9, 9, 9])]), key: "k") == .success(image))
        #expect(DiskEntry.decode(entry([(99, []), (1, png)]), key: "k") == .success(image))
        #expect(DiskEntry.decode(entry([(1, png), (1, png)]), key: "k") == .failure(.badMetadata("two content types")))
        #expect(DiskEntry.decode(entry([(99, [1])]), key: "k") == .failure(.badMetadata("no content type")))
        #expect(DiskEntry.decode(entry([(1, png), (2, [1, 2, 3])]), key: "k") == .failure(.badMetadata("a pixel size of 3 bytes")))
        #expect(DiskEntry.decode(entry([(1, png), (2, [0, 0, 0, 0x80, 1, 0, 0, 0])]), key: "k") == .failure(.badMetadata("a negative pixel size")))
        #expect(DiskEntry.decode(entry([(1, [0xC3, 0x28])]), key: "k") == .failure(.badMetadata("the content type is not short UTF-8")))
    }

    /// The cache header record: its layout is checked field by field; a record of another layout
    /// version is not damage but no headers (the entry is then stale and fetched again).
    @Test func cacheHeaderRecordsAreChecked() {
        let good = DiskEntry.encodeCacheHeaders(Self.headers)
        func decode(_ record: [UInt8]) -> Result<CacheHeaders?, DiskEntry.Problem> {
            DiskEntry.decodeCacheHeaders(record, from: 0, to: record.count)
        }
        #expect(decode(good) == .success(Self.headers))
        var later = good
        later[0] = 2
        #expect(decode(later) == .success(nil))
        #expect(decode([]) == .failure(.badMetadata("an empty cache header record")))
        #expect(decode(Array(good.prefix(20))) == .failure(.badMetadata("a cache header record is cut off")))
        #expect(decode(good + [0x22]) == .failure(.badMetadata("an ETag of 6 bytes in a record with 7 left")))
        var negative = good
        for index in 4..<12 { negative[index] = 0xF0 }
        #expect(decode(negative) == .failure(.badMetadata("a cache duration of \(Int64(bitPattern: 0xF0F0_F0F0_F0F0_F0F0)) s")))
        var infinite = good
        withUnsafeBytes(of: Double.infinity.bitPattern.littleEndian) { infinite.replaceSubrange(44..<52, with: $0) }
        #expect(decode(infinite) == .failure(.badMetadata("a date of inf s since 1970, outside the years 1 to 9999")))
        // Finite, but past year 9999 or before year 1: HTTPDate.format and freshness could not use it.
        for seconds in [1e19, -1e19, HTTPDate.latest + 1, HTTPDate.earliest - 1] {
            var far = good
            withUnsafeBytes(of: seconds.bitPattern.littleEndian) { far.replaceSubrange(52..<60, with: $0) }
            #expect(decode(far) == .failure(.badMetadata("a date of \(seconds) s since 1970, outside the years 1 to 9999")))
        }
        var timeless = good
        withUnsafeBytes(of: Double.nan.bitPattern.littleEndian) { timeless.replaceSubrange(76..<84, with: $0) }
        #expect(decode(timeless) == .failure(.badMetadata("a cache header record without its exchange's times")))
        var notUTF8 = good
        notUTF8[notUTF8.count - 1] = 0xC3
        #expect(decode(notUTF8) == .failure(.badMetadata("an ETag that is not UTF-8")))
    }

    /// Recomputes the trailing checksum over the damaged bytes.
    static func reseal(_ bytes: inout [UInt8]) {
        let body = bytes.count - DiskEntry.checksumSize
        let sum = DiskEntry.checksum(bytes, count: body)
        for byte in 0..<8 { bytes[body + byte] = UInt8(truncatingIfNeeded: sum >> (8 * UInt64(byte))) }
    }
}
