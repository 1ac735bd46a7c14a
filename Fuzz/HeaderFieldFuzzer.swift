// libFuzzer target for the parsers of what a client or an origin sends in header fields and
// request targets (`make fuzz`, after the disk entry fuzzer).
//
// Built by scripts/fuzz with `swiftc -sanitize=fuzzer,address` from the parsers' own sources:
// HTTPCaching (a response's `Cache-Control`, `Age`, HTTP dates, `ETag`; a request's
// `If-None-Match` and `If-Modified-Since`; hex digests), the cache's stored form of a response's
// headers (DiskEntry's cache header record), and the app's weighted lists of `Accept` and
// `Accept-Encoding` (WeightedPreferences) and its `Accept` negotiation (ServedFormat),
// `Host`/`Origin` checks (AllowedHosts) and image route parser (ImageRoute); and the gallery's
// check of a feed request's nonce (FeedNonce).
//
// The input is read as text. Each line `name: value` is a response field, and the whole input
// is also every single field value at once. A trap, an out-of-bounds access, or a broken promise
// of a parser (below, as `expect`s) is a crash, which libFuzzer reports with its input; a
// parser that takes seconds on one input fails the run too (scripts/fuzz sets `-timeout`).
import Foundation
import HTTPCaching
import Imaging

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHeaderFields(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    var fields: [(String, String)] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        guard let colon = line.firstIndex(of: ":") else { continue }
        fields.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
    }
    useAsResponse(fields, whole: text)
    useAsRequestFields(text)
    useAsRequestTarget(text)
    useAsAnswerBody(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// What the cache does with an answer's bytes before it keeps them: reads their first bytes for
/// an image's signature. It must never read out of bounds, and a format it names must begin as
/// that format does.
private func useAsAnswerBody(_ bytes: UnsafeRawBufferPointer) {
    guard let format = ImageSignature.format(of: bytes) else { return }
    let head = Array(bytes.prefix(16))
    switch format {
    case .png: expect(head.starts(with: [0x89, 0x50, 0x4E, 0x47]), "PNG without its signature")
    case .jpeg: expect(head.starts(with: [0xFF, 0xD8, 0xFF]), "JPEG without its marker")
    case .gif: expect(head.starts(with: Array("GIF8".utf8)), "GIF without its signature")
    case .webp: expect(head.starts(with: Array("RIFF".utf8)) && bytes.count >= 12, "WebP without RIFF")
    case .avif, .heif: expect(bytes.count >= 16 && Array(head[4..<8]) == Array("ftyp".utf8), "an ISO image without ftyp")
    case .svg: expect(bytes.count > 4, "SVG of nothing")
    case .jpegXL, .tiff, .bmp, .ico: expect(bytes.count >= 2, "\(format) of one byte")
    }
}

/// What the cache does with an origin's answer: read its caching fields, decide freshness, keep
/// them on disk and read them back, and answer a later 304 with them.
private func useAsResponse(_ fields: [(String, String)], whole text: String) {
    let sent = Date(timeIntervalSince1970: 1_700_000_000)
    let received = sent.addingTimeInterval(1)
    for headers in [
        CacheHeaders(fields: fields, requestTime: sent, responseTime: received),
        CacheHeaders(
            fields: ["Cache-Control", "Date", "Expires", "Last-Modified", "Age", "ETag"].map { ($0, text) },
            requestTime: sent, responseTime: received
        ),
    ] {
        let control = headers.cacheControl
        for seconds in [control.maxAge, control.sharedMaxAge, control.staleWhileRevalidate, control.staleIfError, headers.age] {
            guard let seconds else { continue }
            expect((0...CacheControl.deltaSecondsCap).contains(seconds), "a delta-seconds of \(seconds)")
        }
        // The field value written back reads as the same directives.
        expect(CacheControl(control.fieldValue) == control, "Cache-Control does not survive its own field value")
        for date in [headers.date, headers.lastModified] {
            guard let date else { continue }
            expect(HTTPDate.isRepresentable(date), "parsed a date outside the years 1 to 9999")
            expect(HTTPDate.parse(HTTPDate.format(date)) == date, "a parsed date does not format as itself")
        }
        for (_, value) in headers.conditionalFields {
            // What AsyncHTTPClient sends: a field value without control characters.
            expect(!value.isEmpty && value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }, "a conditional field that cannot be sent")
        }
        for now in [received, Date(timeIntervalSince1970: HTTPDate.earliest), Date(timeIntervalSince1970: HTTPDate.latest)] {
            let freshness = headers.freshness(at: now)
            expect(freshness.age >= 0 && freshness.lifetime >= 0, "a negative age or lifetime")
            _ = freshness.allowsStaleAnswer(originUnreachable: true)
        }
        // Kept on disk and read back: the same headers, but for what the record documents it
        // does not keep (an ETag longer than its limit; an unreadable `Expires`, which is
        // "already expired", as the first second of year 1).
        let record = DiskEntry.encodeCacheHeaders(headers)
        guard case let .success(read?) = DiskEntry.decodeCacheHeaders(record, from: 0, to: record.count) else {
            fail("an origin's headers, once stored, cannot be read back")
        }
        var expected = headers
        if let etag = expected.etag, etag.isEmpty || etag.utf8.count > DiskEntry.etagLimit { expected.etag = nil }
        if let expires = expected.expires, expires.timeIntervalSince1970 < HTTPDate.earliest {
            expected.expires = Date(timeIntervalSince1970: HTTPDate.earliest)
        }
        expect(read == expected, "an origin's headers read back differ from those stored")
        let updated = read.updated(withNotModified: [("Cache-Control", text), ("Date", text)], requestTime: received, responseTime: received)
        _ = updated.freshness(at: received)
    }
}

/// What the servers do with a client's fields: conditional GETs, `Accept`, `Host` and `Origin`.
private func useAsRequestFields(_ text: String) {
    let etag = "\"0123abcd\""
    if ConditionalRequest.matches(text, etag: etag) {
        expect(text.contains("*") || text.contains("0123abcd"), "If-None-Match matched a tag it does not name")
    }
    _ = ConditionalRequest.notModified(ifNoneMatch: nil, ifModifiedSince: text, etag: etag, lastModified: Date(timeIntervalSince1970: 0))
    if let digest = Hex.bytes(text, count: text.utf8.count / 2) {
        expect(Hex.lowercase(digest) == text.lowercased(), "hex does not survive decoding")
    }
    // `Accept` and `Accept-Encoding`: each element a name without `;`, an unquoted `,` or optional
    // whitespace around it, and a weight of 0 to 1; a field over the limit not read at all.
    var elements = 0
    for preference in WeightedPreferences(text) {
        let name = preference.name
        expect((0...1000).contains(preference.weight), "a weight of \(preference.weight) thousandths")
        expect(!name.isEmpty && WeightedPreferences.trimmed(name).count == name.count, "a name with space around it")
        expect(!name.contains(UInt8(ascii: ";")) && WeightedPreferences.firstUnquoted(UInt8(ascii: ","), in: name) == name.endIndex, "a name past its element")
        elements += 1
    }
    expect(elements == 0 || text.utf8.count <= WeightedPreferences.maxLength, "read a field over \(WeightedPreferences.maxLength) bytes")
    let lowercased = text.lowercased()
    for offered in [ServedFormat.allCases, [.webp, .png], [.png], [.avif, .png]] {
        let chosen = ServedFormat.negotiate(text, offered: offered)
        expect(chosen == .png || offered.contains(chosen), "negotiated \(chosen), which was not offered")
        expect(chosen == .png || lowercased.contains(chosen.mediaType), "negotiated \(chosen), which the client did not name")
    }
    _ = try? ServedFormat.list(text)
    let hosts = AllowedHosts(bound: "127.0.0.1", extra: ["example.com"])
    let allowed = hosts.allows(host: text.utf8[...])
    if let (host, port) = AllowedHosts.split(text.utf8[...], portAllowed: true) {
        expect(!host.isEmpty, "an authority with an empty host")
        expect(port.map { (0...65535).contains($0) } ?? true, "a port of \(port!)")
    } else {
        expect(!allowed, "allowed a host that does not split")
    }
    if AllowedHosts.isSameOrigin(text[...], as: "127.0.0.1:8080") {
        expect(text.lowercased().hasPrefix("http"), "the same origin without a scheme")
    }
    // The gallery's check of a feed request's `EmojiArt-Feed-Nonce`: a well-formed nonce is
    // 22 to 128 characters of base64url, so a signature base line made of it holds nothing else.
    if FeedNonce.isWellFormed(text) {
        expect((22...FeedNonce.maximumLength).contains(text.utf8.count), "a nonce of \(text.utf8.count) bytes")
        expect(text.utf8.allSatisfy { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }, "a nonce outside base64url")
    }
}

/// What the image routes do with a request target.
private func useAsRequestTarget(_ text: String) {
    guard let (route, density, piece, version) = ImageRoute.parse(text) else { return }
    expect(text.hasPrefix("/\(route.rawValue)/"), "parsed a route the path does not start with")
    expect(density == 1 || density == 2, "a density of \(density)")
    expect((0..<1_000_000_000).contains(piece), "a piece number of \(piece)")
    if let version { expect(!version.isEmpty && version.count <= 64, "a version of \(version.count) characters") }
}

/// A broken promise: stops with its message (`precondition`'s is dropped in optimised builds).
private func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fail(message()) }
}

private func fail(_ message: String) -> Never {
    fatalError(message)
}
