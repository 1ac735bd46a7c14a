import EmojiArtApp
import Foundation
import HTTPCaching
@testable import ImageCache
import Testing
import TestSupport
import GalleryFeed

/// Builds disk entries by hand, field by field, with a valid XXH3 checksum whatever they hold: what
/// someone who can write the cache directory can plant.
enum ExtremeEntries {
    struct NotAnEntry: Error {}

    /// One metadata record.
    static func record(_ tag: UInt16, _ value: [UInt8]) -> [UInt8] {
        le(tag) + le(UInt32(truncatingIfNeeded: value.count)) + value
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    /// A whole entry: header (with the given lengths, or the true ones), key, metadata, payload,
    /// and its checksum.
    static func entry(
        version: UInt8, key: String, metadata: [UInt8], payload: [UInt8],
        lengths: (key: UInt32, metadata: UInt32, payload: UInt64)? = nil
    ) -> [UInt8] {
        let keyBytes = Array(key.utf8)
        let (keyLength, metadataLength, payloadLength) = lengths
            ?? (UInt32(keyBytes.count), UInt32(metadata.count), UInt64(payload.count))
        var bytes = Array("EMJC".utf8) + [version, 0, 0, 0]
        bytes += le(keyLength) + le(metadataLength) + le(payloadLength) + le(UInt64(0))
        bytes += keyBytes + metadata + payload
        bytes += le(DiskEntry.checksum(bytes, count: bytes.count))
        return bytes
    }

    /// A cache header record holding exactly these values.
    static func cacheHeaders(flags: UInt16, seconds: [Int64], dates: [Double], etag: [UInt8], claimedETagLength: UInt16? = nil) -> [UInt8] {
        var value: [UInt8] = [1, 0] + le(flags)
        for second in seconds { value += le(UInt64(bitPattern: second)) }
        for date in dates { value += le(date.bitPattern) }
        value += le(claimedETagLength ?? UInt16(truncatingIfNeeded: etag.count)) + etag
        return value
    }

    /// Replaces date `field` (0 Date, 1 Last-Modified, 2 Expires, 3 request, 4 response time) of
    /// the entry's cache header record and re-seals it.
    static func setDate(_ bytes: inout [UInt8], field: Int, to seconds: Double) throws {
        guard bytes.count >= 40 else { throw NotAnEntry() }
        let keyLength = Int(DiskEntry.read(UInt32.self, bytes, at: 8))
        let metadataLength = Int(DiskEntry.read(UInt32.self, bytes, at: 12))
        var offset = 32 + keyLength
        let end = offset + metadataLength
        while offset + 6 <= end {
            let tag = DiskEntry.read(UInt16.self, bytes, at: offset)
            let length = Int(DiskEntry.read(UInt32.self, bytes, at: offset + 2))
            if tag == DiskEntry.Tag.cacheHeaders.rawValue {
                let at = offset + 6 + 4 + 8 * 5 + 8 * field
                bytes.replaceSubrange(at..<at + 8, with: le(seconds.bitPattern))
                let body = bytes.count - 8
                bytes.replaceSubrange(body..., with: le(DiskEntry.checksum(bytes, count: body)))
                return
            }
            offset += 6 + length
        }
        throw NotAnEntry()
    }
}

/// Issue 25, finding 2: checksum-valid entries with extreme values in every field, decoded and then
/// used as the cache and the app use them (conditional request fields, HTTP dates, freshness, the
/// 304 update, the feed's JSON with its prices, an offline lookup through a real pipeline). A trap
/// would end the test process; reaching the end with both verdicts seen is 0 traps.
@Suite(.timeLimit(.minutes(3))) struct ExtremeEntriesTests {
    static let durations: [Int64] = [-2, -1, 0, 1, 60, 2_147_483_647, 2_147_483_648, 2_147_483_649, .max, .min, 1 << 40]
    static let dates: [Double] = [
        .nan, 0, 1e9, 1.7e9, 1e19, -1e19, .infinity, -.infinity, HTTPDate.earliest, HTTPDate.latest,
        HTTPDate.earliest - 1, HTTPDate.latest + 1, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNonzeroMagnitude, -0.0, 253_402_300_799.5, 9.2e18,
    ]
    static let prices = ["0", "12.5", "1000000", "1000000.01", "1e300", "-1", "-0.0", "5e-324", "1.7976931348623157e308", "1e400", "\"12\"", "null"]
    static let pixelValues: [UInt32] = [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF]
    static let statuses: [UInt16] = [404, 410, 200, 0, 304, 0xFFFF]

    func pick<T>(_ values: [T], _ random: inout SplitMix) -> T {
        values[Int(random.next() % UInt64(values.count))]
    }

    /// One entry with a random choice of extremes in every field.
    func makeEntry(_ random: inout SplitMix, key: String) -> [UInt8] {
        var metadata: [UInt8] = []
        let missing = random.next() % 4 == 0
        let version: UInt8 = missing ? (random.next() % 5 == 0 ? 2 : 3) : (random.next() % 8 == 0 ? 3 : 2)
        if missing {
            metadata += ExtremeEntries.record(5, ExtremeEntries.le(pick(Self.statuses, &random)))
        } else {
            let contentType = random.next() % 10 == 0 ? [UInt8](repeating: 0x61, count: 1_025) : Array("application/json".utf8)
            metadata += ExtremeEntries.record(1, contentType)
            if random.next() % 2 == 0 {
                metadata += ExtremeEntries.record(
                    2, ExtremeEntries.le(pick(Self.pixelValues, &random)) + ExtremeEntries.le(pick(Self.pixelValues, &random))
                )
            }
        }
        if random.next() % 8 != 0 {
            // Mostly in range, so the dates that are not get past every other check.
            let seconds = (0..<5).map { _ in random.next() % 3 == 0 ? pick(Self.durations, &random) : Int64(random.next() % 100_000) - 1 }
            let dates = (0..<5).map { index in
                random.next() % 3 == 0 ? pick(Self.dates, &random) : (index == 1 ? .nan : 1.7e9 + Double(random.next() % 1_000_000))
            }
            let etag = [UInt8](repeating: 0x22, count: Int(random.next() % 3 == 0 ? 1_025 : random.next() % 40))
            let claimed: UInt16? = random.next() % 10 == 0 ? .max : nil
            metadata += ExtremeEntries.record(
                3, ExtremeEntries.cacheHeaders(flags: UInt16(truncatingIfNeeded: random.next()), seconds: seconds, dates: dates, etag: etag, claimedETagLength: claimed)
            )
        }
        var payload: [UInt8] = []
        if !missing || random.next() % 10 == 0 {
            let files = (0..<Int(random.next() % 4)).map { index in
                #"{"name":"n\#(index)","url":"/gallery/image?\#(random.next() % 100)","price":\#(pick(Self.prices, &random)),"checksum":"sha256:00"}"#
            }
            payload = Array(("[" + files.joined(separator: ",") + "]").utf8)
        }
        var lengths: (key: UInt32, metadata: UInt32, payload: UInt64)?
        if random.next() % 10 == 0 {
            let huge: [UInt64] = [.max, UInt64(UInt32.max), 1 << 40, UInt64(Int64.max), UInt64(Int64.max) + 1]
            lengths = (
                UInt32(truncatingIfNeeded: pick(huge, &random)), UInt32(truncatingIfNeeded: pick(huge, &random)), pick(huge, &random)
            )
        }
        return ExtremeEntries.entry(version: version, key: key, metadata: metadata, payload: payload, lengths: lengths)
    }

    /// The stored headers used as the cache uses them.
    func use(_ headers: CacheHeaders) {
        for (_, value) in headers.conditionalFields {
            #expect(!value.isEmpty)
        }
        for date in [headers.date, headers.lastModified, headers.expires, headers.requestTime, headers.responseTime] {
            guard let date else { continue }
            #expect(HTTPDate.isRepresentable(date))
            #expect(HTTPDate.parse(HTTPDate.format(date)) != nil)
        }
        for now in [headers.responseTime, Date(timeIntervalSince1970: HTTPDate.earliest), Date(timeIntervalSince1970: HTTPDate.latest)] {
            let freshness = headers.freshness(at: now)
            _ = freshness.allowsStaleAnswer(originUnreachable: false)
        }
        if let maxAge = headers.cacheControl.maxAge { #expect((0...CacheControl.deltaSecondsCap).contains(maxAge)) }
        let updated = headers.updated(withNotModified: [("Last-Modified", "Fri, 31 Dec 9999 23:59:59 GMT")], requestTime: headers.requestTime, responseTime: headers.responseTime)
        _ = updated.conditionalFields
        let record = DiskEntry.encodeCacheHeaders(headers)
        #expect(DiskEntry.decodeCacheHeaders(record, from: 0, to: record.count) == .success(headers))
    }

    /// The payload decoded as the app decodes its feed, every price shown.
    func useAsFeed(_ payload: [UInt8]) -> Bool {
        guard let feed = try? JSONDecoder().decode([ImageFile].self, from: Data(payload)) else { return false }
        for file in feed {
            #expect(ImageFile.priceRange.contains(file.price))
            #expect(file.formattedPrice.hasPrefix("$"))
        }
        return true
    }

    @Test func twentyThousandSeededExtremeEntriesDecodeAndAreUsedWithoutATrap() async throws {
        var random = SplitMix(seed: 25)
        let key = "http://127.0.0.1:1/gallery/images#verified-by=k"
        var accepted = 0, rejected = 0, missing = 0, feeds = 0
        var planted: [[UInt8]] = []
        for index in 0..<20_000 {
            let bytes = makeEntry(&random, key: key)
            switch DiskEntry.decodeEntry(bytes, key: key) {
            case let .success(.image(image)):
                accepted += 1
                if let headers = image.cacheHeaders { use(headers) }
                if let size = image.pixelSize { #expect(size.width >= 0 && size.height >= 0) }
                if useAsFeed(image.data) { feeds += 1 }
                if index % 100 == 0 { planted.append(bytes) }
            case let .success(.missing(status, headers, _)):
                accepted += 1
                missing += 1
                #expect(status == 404 || status == 410)
                if let headers { use(headers) }
                if index % 100 == 0 { planted.append(bytes) }
            case .failure:
                rejected += 1
                if index % 500 == 0 { planted.append(bytes) }
            }
        }
        #expect(accepted > 1_000 && rejected > 1_000 && missing > 100 && feeds > 100, "\(accepted) \(rejected) \(missing) \(feeds)")

        // Planted in a real cache directory and looked up offline through a real pipeline: the
        // pipeline's own freshness and known-missing decisions run on each.
        for bytes in planted {
            let directory = TemporaryDirectory()
            let storage = DiskStorage(directory: directory.url)
            try storage.setUp()
            try Data(bytes).write(to: directory.url.appendingPathComponent(storage.fileName(forKey: key)))
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            _ = try? await pipeline.image(for: ImageRequest(url: URL(string: key)!, cachePolicy: .returnCacheDataDontLoad))
            _ = await pipeline.storedImage(forKey: key)
        }
    }

    /// Out-of-range prices are a decoding error that names the price, never a value to trap on.
    @Test func aFeedPriceOutsideTheRangeIsAClearDecodingError() {
        for price in ["1e300", "-1", "1000000.01"] {
            let json = #"[{"name":"n","url":"/gallery/image?1","price":\#(price),"checksum":"sha256:\#(String(repeating: "0", count: 64))"}]"#
            #expect {
                try JSONDecoder().decode([ImageFile].self, from: Data(json.utf8))
            } throws: { error in
                "\(error)".contains("/gallery/image?1") && "\(error)".contains("not an amount within 0...1000000 dollars")
            }
        }
        #expect(ImageFile(name: "n", url: "u", price: .nan, checksum: "c").formattedPrice == "$0.00")
        #expect(ImageFile(name: "n", url: "u", price: 1e300, checksum: "c").formattedPrice == "$1,000,000.00")
    }

    /// A checksum is compared, stored with a known-missing entry and written to logs: one that is
    /// not `sha256:` and 64 hex digits (escape sequences, a megabyte of text) does not decode.
    @Test func aFeedChecksumThatIsNotADigestIsAClearDecodingError() throws {
        let digest = String(repeating: "ab", count: 32)
        for checksum in ["sha256:00", "", "sha256:" + digest + "0", "md5:" + digest, "sha256:" + String(repeating: "g", count: 64),
                         "sha256:\u{1B}]0;owned\u{07}" + String(repeating: "a", count: 52)] {
            let json = try String(decoding: JSONEncoder().encode(["checksum": checksum]), as: UTF8.self)
                .replacingOccurrences(of: "{", with: #"[{"name":"n","url":"/gallery/image?1","price":5,"#) + "]"
            #expect {
                try JSONDecoder().decode([ImageFile].self, from: Data(json.utf8))
            } throws: { error in
                "\(error)".contains("/gallery/image?1") && "\(error)".contains("is not sha256: and 64 hex digits")
            }
        }
        let good = #"[{"name":"n","url":"/gallery/image?1","price":5,"checksum":"sha256:\#(digest.uppercased())"}]"#
        #expect(try JSONDecoder().decode([ImageFile].self, from: Data(good.utf8)).count == 1)
    }
}
