// libFuzzer target for the cache's disk entry decoder (`make fuzz`).
//
// Built by scripts/fuzz with `swiftc -sanitize=fuzzer,address` together with the decoder's own
// sources (DiskEntry.swift and its cache header record, Image.swift, HTTPCaching) and the feed's
// `ImageFile`, so it exercises exactly the code the cache and the app run. Each input is decoded
// twice: as it is (nearly always rejected by the checksum), and with its last 8 bytes replaced by
// a valid XXH3 checksum, so that the length checks and the metadata parser see every input too.
//
// Whatever decodes is then used as the app uses it: its conditional request fields (HTTP dates
// formatted), its freshness now and far from now, whether a stale answer is allowed, the 304
// update, the record written again and read back, and the payload decoded as the feed's JSON
// with every price formatted. A trap, an out-of-bounds access or a decoded value outside the
// ranges the format promises is a crash, which libFuzzer reports with the input that caused it.
import Foundation
import GalleryFeed
import HTTPCaching

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDiskEntry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    check(DiskEntry.decodeEntry(bytes, key: "k"), inputSize: size)
    if bytes.count >= DiskEntry.checksumSize {
        let body = bytes.count - DiskEntry.checksumSize
        let sum = DiskEntry.checksum(bytes, count: body)
        for byte in 0..<8 { bytes[body + byte] = UInt8(truncatingIfNeeded: sum >> (8 * UInt64(byte))) }
        check(DiskEntry.decodeEntry(bytes, key: "k"), inputSize: size)
    }
    return 0
}

private func check(_ result: Result<DiskEntry.Content, DiskEntry.Problem>, inputSize: Int) {
    switch result {
    case let .success(.image(image)):
        precondition(image.data.count <= inputSize, "decoded a payload longer than the entry")
        precondition(image.contentType.utf8.count <= DiskEntry.contentTypeLimit, "decoded an over-long content type")
        if let size = image.pixelSize { precondition(size.width >= 0 && size.height >= 0, "decoded a negative pixel size") }
        if let headers = image.cacheHeaders { use(headers) }
        useAsFeed(image.data)
    case let .success(.missing(status, headers, _)):
        precondition(DiskEntry.missingStatuses.contains(status), "decoded a known-missing entry of status \(status)")
        if let headers { use(headers) }
    case .failure:
        break
    }
}

/// What the cache does with stored headers: revalidation fields, freshness, the 304 update.
private func use(_ headers: CacheHeaders) {
    for (_, value) in headers.conditionalFields {
        // What AsyncHTTPClient sends: a field value without control characters.
        precondition(!value.isEmpty && value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }, "a conditional field that cannot be sent")
    }
    for date in [headers.date, headers.lastModified, headers.expires, headers.requestTime, headers.responseTime] {
        guard let date else { continue }
        precondition(HTTPDate.isRepresentable(date), "decoded a date outside the years 1 to 9999")
        precondition(HTTPDate.parse(HTTPDate.format(date)) != nil, "a decoded date does not format as an HTTP date")
    }
    for now in [headers.responseTime, Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: HTTPDate.latest)] {
        let freshness = headers.freshness(at: now)
        _ = freshness.allowsStaleAnswer(originUnreachable: true)
        _ = freshness.allowsStaleAnswer(originUnreachable: false)
    }
    _ = headers.cacheControl.fieldValue
    let updated = headers.updated(
        withNotModified: [("Cache-Control", "max-age=60")], requestTime: headers.requestTime, responseTime: headers.responseTime
    )
    _ = updated.freshness(at: headers.responseTime)
    let record = DiskEntry.encodeCacheHeaders(headers)
    guard case .success(headers?) = DiskEntry.decodeCacheHeaders(record, from: 0, to: record.count) else {
        preconditionFailure("decoded headers do not survive being written again")
    }
}

/// What the app does with the feed's stored bytes: decode them and show every price.
private func useAsFeed(_ payload: [UInt8]) {
    guard let feed = try? JSONDecoder().decode([ImageFile].self, from: Data(payload)) else { return }
    for file in feed {
        precondition(ImageFile.priceRange.contains(file.price), "decoded a price outside the range")
        _ = file.formattedPrice
        _ = file.pieceNumber
    }
}
