import CXXHash
import Foundation
import HTTPCaching

/// The on-disk format of one cache entry, versions 2 and 3. Integers are little-endian.
///
/// ```
/// offset       size  field
///      0          4  magic "EMJC"
///      4          1  format version (2, or 3 for a known-missing entry)
///      5          3  zero
///      8          4  key length K
///     12          4  metadata length M
///     16          8  payload length P
///     24          8  zero (reserved)
///     32          K  the cache key, UTF-8: a file is only served for its own key
///   32+K          M  metadata: records of (tag u16, length u32, value), see ``Tag``
/// 32+K+M          P  the payload: the encoded image
/// 32+K+M+P        8  XXH3-64 of every byte before it
/// ```
///
/// The checksum covers the whole entry, header and metadata included, so a damaged length,
/// content type or pixel size is caught like a damaged payload. It guards against accidental
/// damage (torn writes, bit rot), as LevelDB's and RocksDB's CRC32C do; authenticity is the
/// feed's SHA-256, checked once when bytes arrive from the origin.
///
/// Metadata records hold what is stored with an entry besides its bytes (content type, pixel
/// size, HTTP validators and freshness, the original a variant was made from); a reader skips
/// tags it does not know, so a later version can add records without a new format version. Every length read from a file is checked against the bytes
/// actually there, by subtraction from what remains, so no value in a file can overflow an
/// offset or reach outside the buffer; every value is checked against its range where it is
/// read (dates within the years 1 to 9999, durations within delta-seconds' cap, sizes
/// non-negative), so nothing a file holds can trap the code that uses it.
///
/// Version 3 is version 2 plus the ``Tag/status`` record: an entry that remembers the origin
/// answered 404 or 410 (a known-missing entry; empty payload, no content type). Images are still
/// written as version 2, so an older build keeps reading them; a known-missing entry is written
/// as version 3, which an older build drops as unknown instead of answering an empty image.
enum DiskEntry {
    static let magic: [UInt8] = Array("EMJC".utf8)
    /// The version images are written in.
    static let version: UInt8 = 2
    /// The version known-missing entries are written in: 2 plus the status record.
    static let missingVersion: UInt8 = 3
    static let headerSize = 32
    static let checksumSize = 8
    /// Longest content type kept, in UTF-8 bytes; a longer one is cut.
    static let contentTypeLimit = 1024

    /// Metadata record tags.
    enum Tag: UInt16 {
        /// The content type, UTF-8. Required.
        case contentType = 1
        /// Width and height in pixels, two little-endian `Int32`s, each >= 0.
        case pixelSize = 2
        /// What the origin said about caching the bytes (`Image.cacheHeaders`), in the layout
        /// of `DiskEntry.encodeCacheHeaders(_:)`.
        case cacheHeaders = 3
        /// The SHA-256 of the original bytes (`Image.originalSHA256`), 32 raw bytes.
        case originalSHA256 = 4
        /// Version 3 only: the origin's status for a known-missing entry, a little-endian
        /// `UInt16`, 404 or 410. Its entry has no content type and an empty payload.
        case status = 5
        /// Version 3 only: the SHA-256 the request that found the resource missing expected
        /// (`ImageRequest.expectedSHA256`, its feed's checksum), UTF-8, at most
        /// ``expectedSHA256Limit`` bytes. The entry answers only a request that expects the same.
        case expectedSHA256 = 6
    }

    /// Longest expected SHA-256 kept with a known-missing entry, in UTF-8 bytes.
    static let expectedSHA256Limit = 128

    /// What an entry holds.
    enum Content: Equatable {
        /// An image.
        case image(Image)
        /// The origin answered `status` (404 or 410) with these headers to a request that
        /// expected `expectedSHA256`: the resource is known to be missing while they say the
        /// answer is fresh, for a request that expects the same.
        case missing(status: Int, cacheHeaders: CacheHeaders?, expectedSHA256: String?)
    }

    /// The statuses a known-missing entry may hold.
    static let missingStatuses: Set<Int> = [404, 410]

    /// Why an entry was not accepted. Every case but ``outdatedVersion`` means damage.
    enum Problem: Swift.Error, Equatable, CustomStringConvertible {
        /// Fewer bytes than the smallest possible entry.
        case truncated(length: Int)
        /// Does not start with the magic bytes.
        case notAnEntry
        /// Written by format version 1, which has no whole-entry checksum: dropped as a miss.
        case outdatedVersion(UInt8)
        /// A format version this build does not know.
        case unknownVersion(UInt8)
        /// The bytes do not hash to the stored checksum.
        case checksumMismatch
        /// The lengths in the header do not add up to the file's length.
        case lengthMismatch(length: Int, key: UInt32, metadata: UInt32, payload: UInt64)
        /// The entry was written for another key (a hash collision of file names, or a copied file).
        case otherKey
        /// The metadata section does not parse.
        case badMetadata(String)
        /// Not damage: a known-missing entry, where an image was asked for (see ``DiskEntry/decodeEntry(_:key:)``).
        case notAnImage(status: Int)

        var description: String {
            switch self {
            case let .truncated(length): "\(length) bytes, shorter than any entry (truncated?)"
            case .notAnEntry: "not a cache entry (bad magic)"
            case let .outdatedVersion(version): "written by format version \(version), which this build no longer reads"
            case let .unknownVersion(version): "unknown format version \(version)"
            case .checksumMismatch: "the bytes do not match their XXH3 checksum"
            case let .lengthMismatch(length, key, metadata, payload):
                "header says key \(key) + metadata \(metadata) + payload \(payload) bytes, file has \(length)"
            case .otherKey: "the entry belongs to another key"
            case let .badMetadata(reason): "bad metadata: \(reason)"
            case let .notAnImage(status): "a known-missing entry (HTTP \(status)), not an image"
            }
        }
    }

    // MARK: - Writing

    /// The bytes of `image`'s entry under `key`.
    static func encode(_ image: Image, key: String) -> [UInt8] {
        var metadata: [UInt8] = []
        appendRecord(.contentType, Array(image.contentType.utf8.prefix(contentTypeLimit)), to: &metadata)
        if let size = image.pixelSize {
            var value: [UInt8] = []
            append(UInt32(bitPattern: Int32(clamping: max(0, size.width))), to: &value)
            append(UInt32(bitPattern: Int32(clamping: max(0, size.height))), to: &value)
            appendRecord(.pixelSize, value, to: &metadata)
        }
        if let headers = image.cacheHeaders {
            appendRecord(.cacheHeaders, encodeCacheHeaders(headers), to: &metadata)
        }
        if let hex = image.originalSHA256, let digest = Hex.bytes(hex, count: 32) {
            appendRecord(.originalSHA256, digest, to: &metadata)
        }
        return image.withUnsafeBytes { seal(version: version, key: key, metadata: metadata, payload: $0) }
    }

    /// The bytes of a known-missing entry under `key`: the origin answered `status` (404 or 410)
    /// with `headers` to a request that expected `expectedSHA256` (kept when it is at most
    /// ``expectedSHA256Limit`` bytes; the pipeline stores no entry for a longer one).
    static func encodeMissing(status: Int, cacheHeaders headers: CacheHeaders?, expectedSHA256: String? = nil, key: String) -> [UInt8] {
        var metadata: [UInt8] = []
        var value: [UInt8] = []
        append(UInt16(clamping: status), to: &value)
        appendRecord(.status, value, to: &metadata)
        if let headers {
            appendRecord(.cacheHeaders, encodeCacheHeaders(headers), to: &metadata)
        }
        if let expectedSHA256, expectedSHA256.utf8.count <= expectedSHA256Limit {
            appendRecord(.expectedSHA256, Array(expectedSHA256.utf8), to: &metadata)
        }
        return seal(version: missingVersion, key: key, metadata: metadata, payload: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// Header, key, metadata and payload, then the checksum of them all.
    private static func seal(version: UInt8, key: String, metadata: [UInt8], payload: UnsafeRawBufferPointer) -> [UInt8] {
        let keyBytes = Array(key.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(headerSize + keyBytes.count + metadata.count + payload.count + checksumSize)
        out += magic
        out += [version, 0, 0, 0]
        append(UInt32(keyBytes.count), to: &out)
        append(UInt32(metadata.count), to: &out)
        append(UInt64(payload.count), to: &out)
        append(UInt64(0), to: &out)
        out += keyBytes
        out += metadata
        out += payload
        append(checksum(out, count: out.count), to: &out)
        return out
    }

    static func appendRecord(_ tag: Tag, _ value: [UInt8], to out: inout [UInt8]) {
        append(tag.rawValue, to: &out)
        append(UInt32(value.count), to: &out)
        out += value
    }

    static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out += $0 }
    }

    // MARK: - Reading

    /// Parses and checks an image entry read from disk; a known-missing entry is
    /// ``Problem/notAnImage(status:)``.
    static func decode(_ bytes: [UInt8], key: String) -> Result<Image, Problem> {
        decodeEntry(bytes, key: key).flatMap { content in
            switch content {
            case let .image(image): .success(image)
            case let .missing(status, _, _): .failure(.notAnImage(status: status))
            }
        }
    }

    /// Parses and checks an entry read from disk: an image or a known-missing entry.
    static func decodeEntry(_ bytes: [UInt8], key: String) -> Result<Content, Problem> {
        let length = bytes.count
        guard length >= 5 else { return .failure(.truncated(length: length)) }
        guard bytes[0] == magic[0], bytes[1] == magic[1], bytes[2] == magic[2], bytes[3] == magic[3] else {
            return .failure(.notAnEntry)
        }
        let entryVersion = bytes[4]
        switch entryVersion {
        case version, missingVersion: break
        case 1: return .failure(.outdatedVersion(1))
        case let other: return .failure(.unknownVersion(other))
        }
        guard length >= headerSize + checksumSize else { return .failure(.truncated(length: length)) }
        let body = length - checksumSize
        guard checksum(bytes, count: body) == read(UInt64.self, bytes, at: body) else {
            return .failure(.checksumMismatch)
        }
        // The checksum matched, yet nothing below trusts a length it has not checked.
        let keyLength = read(UInt32.self, bytes, at: 8)
        let metadataLength = read(UInt32.self, bytes, at: 12)
        let payloadLength = read(UInt64.self, bytes, at: 16)
        var remaining = body - headerSize
        guard UInt64(keyLength) <= UInt64(remaining) else {
            return .failure(.lengthMismatch(length: length, key: keyLength, metadata: metadataLength, payload: payloadLength))
        }
        remaining -= Int(keyLength)
        guard UInt64(metadataLength) <= UInt64(remaining) else {
            return .failure(.lengthMismatch(length: length, key: keyLength, metadata: metadataLength, payload: payloadLength))
        }
        remaining -= Int(metadataLength)
        guard payloadLength == UInt64(remaining) else {
            return .failure(.lengthMismatch(length: length, key: keyLength, metadata: metadataLength, payload: payloadLength))
        }
        let keyEnd = headerSize + Int(keyLength)
        guard bytes[headerSize..<keyEnd].elementsEqual(key.utf8) else { return .failure(.otherKey) }
        let metadataEnd = keyEnd + Int(metadataLength)
        switch parseMetadata(bytes, from: keyEnd, to: metadataEnd, version: entryVersion) {
        case var .success(.image(image)):
            image.replaceBytes(with: bytes[metadataEnd..<body])
            return .success(.image(image))
        case let .success(missing):
            guard metadataEnd == body else { return .failure(.badMetadata("a known-missing entry with a payload")) }
            return .success(missing)
        case let .failure(problem):
            return .failure(problem)
        }
    }

    /// Walks the metadata records in `bytes[start..<end]`; unknown tags are skipped (and the
    /// status record in a version 2 entry, which predates it). Returns an image with everything
    /// but its data, or a known-missing entry.
    private static func parseMetadata(_ bytes: [UInt8], from start: Int, to end: Int, version entryVersion: UInt8) -> Result<Content, Problem> {
        var offset = start
        var status: Int?
        var contentType: String?
        var pixelSize: Image.PixelSize?
        var cacheHeaders: CacheHeaders?
        var originalSHA256: String?
        var expectedSHA256: String?
        while offset < end {
            guard end - offset >= 6 else { return .failure(.badMetadata("a record header is cut off")) }
            let tag = read(UInt16.self, bytes, at: offset)
            let valueLength = read(UInt32.self, bytes, at: offset + 2)
            let valueStart = offset + 6
            guard UInt64(valueLength) <= UInt64(end - valueStart) else {
                return .failure(.badMetadata("record \(tag) claims \(valueLength) bytes, \(end - valueStart) remain"))
            }
            let valueEnd = valueStart + Int(valueLength)
            switch Tag(rawValue: tag) {
            case .contentType:
                guard contentType == nil else { return .failure(.badMetadata("two content types")) }
                guard valueLength <= contentTypeLimit,
                      let text = String(validating: bytes[valueStart..<valueEnd], as: UTF8.self)
                else { return .failure(.badMetadata("the content type is not short UTF-8")) }
                contentType = text
            case .pixelSize:
                guard pixelSize == nil else { return .failure(.badMetadata("two pixel sizes")) }
                guard valueLength == 8 else { return .failure(.badMetadata("a pixel size of \(valueLength) bytes")) }
                let width = Int32(bitPattern: read(UInt32.self, bytes, at: valueStart))
                let height = Int32(bitPattern: read(UInt32.self, bytes, at: valueStart + 4))
                guard width >= 0, height >= 0 else { return .failure(.badMetadata("a negative pixel size")) }
                pixelSize = Image.PixelSize(width: Int(width), height: Int(height))
            case .cacheHeaders:
                guard cacheHeaders == nil else { return .failure(.badMetadata("two cache header records")) }
                switch decodeCacheHeaders(bytes, from: valueStart, to: valueEnd) {
                case let .success(headers): cacheHeaders = headers
                case let .failure(problem): return .failure(problem)
                }
            case .originalSHA256:
                guard originalSHA256 == nil else { return .failure(.badMetadata("two original digests")) }
                guard valueLength == 32 else { return .failure(.badMetadata("an original digest of \(valueLength) bytes")) }
                originalSHA256 = Hex.lowercase(bytes[valueStart..<valueEnd])
            case .status where entryVersion >= missingVersion:
                guard status == nil else { return .failure(.badMetadata("two statuses")) }
                guard valueLength == 2 else { return .failure(.badMetadata("a status of \(valueLength) bytes")) }
                let value = Int(read(UInt16.self, bytes, at: valueStart))
                guard missingStatuses.contains(value) else { return .failure(.badMetadata("a known-missing entry of status \(value)")) }
                status = value
            case .expectedSHA256 where entryVersion >= missingVersion:
                guard expectedSHA256 == nil else { return .failure(.badMetadata("two expected digests")) }
                guard valueLength <= expectedSHA256Limit, let text = String(validating: bytes[valueStart..<valueEnd], as: UTF8.self) else {
                    return .failure(.badMetadata("an expected digest that is not short UTF-8"))
                }
                expectedSHA256 = text
            case .status, .expectedSHA256, nil:
                break  // written by a later version: not ours to interpret
            }
            offset = valueEnd
        }
        if let status {
            guard contentType == nil, pixelSize == nil, originalSHA256 == nil else {
                return .failure(.badMetadata("a known-missing entry with an image's records"))
            }
            return .success(.missing(status: status, cacheHeaders: cacheHeaders, expectedSHA256: expectedSHA256))
        }
        guard entryVersion == version else { return .failure(.badMetadata("a version \(entryVersion) entry without a status")) }
        guard let contentType else { return .failure(.badMetadata("no content type")) }
        return .success(.image(Image(
            data: [], contentType: contentType, pixelSize: pixelSize, cacheHeaders: cacheHeaders, originalSHA256: originalSHA256
        )))
    }

    /// XXH3-64 of `bytes[0..<count]`.
    static func checksum(_ bytes: [UInt8], count: Int) -> UInt64 {
        bytes.withUnsafeBytes { XXH3_64bits($0.baseAddress, count) }
    }

    /// A little-endian integer at `offset`; the caller has checked that it lies inside `bytes`.
    static func read<T: FixedWidthInteger>(_: T.Type, _ bytes: [UInt8], at offset: Int) -> T {
        bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }
}
