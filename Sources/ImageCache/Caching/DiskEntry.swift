import Crypto

/// The on-disk format of one cache entry (version 1), little-endian:
///
/// ```
/// offset  size  field
///      0     4  magic "EMJC"
///      4     1  format version (1)
///      5     3  zero
///      8     8  payload length
///     16    32  SHA-256 of the payload
///     48     4  key length K
///     52     2  content-type length T
///     54     4  pixel width  (-1 when unknown)
///     58     4  pixel height (-1 when unknown)
///     62     K  the cache key, UTF-8 (a file is only served for its own key)
///   62+K     T  the content type, UTF-8
/// 62+K+T     -  the payload: the encoded image
/// ```
/// A file whose length, hash, key or header does not check out is corrupt.
enum DiskEntry {
    static let magic: [UInt8] = Array("EMJC".utf8)
    static let version: UInt8 = 1
    static let headerSize = 62

    static func encode(_ image: Image, key: String) -> [UInt8] {
        let keyBytes = Array(key.utf8)
        let typeBytes = Array(image.contentType.utf8.prefix(Int(UInt16.max)))
        var out: [UInt8] = []
        out.reserveCapacity(headerSize + keyBytes.count + typeBytes.count + image.data.count)
        out += magic
        out += [version, 0, 0, 0]
        append(UInt64(image.data.count), to: &out)
        out += SHA256.hash(data: image.data)
        append(UInt32(keyBytes.count), to: &out)
        append(UInt16(typeBytes.count), to: &out)
        append(UInt32(bitPattern: Int32(clamping: image.pixelSize?.width ?? -1)), to: &out)
        append(UInt32(bitPattern: Int32(clamping: image.pixelSize?.height ?? -1)), to: &out)
        out += keyBytes
        out += typeBytes
        out += image.data
        return out
    }

    /// Parses and checks an entry; the error string says what is wrong.
    static func decode(_ bytes: [UInt8], key: String) -> Result<Image, EntryProblem> {
        guard bytes.count >= headerSize else { return .failure(.init("\(bytes.count) bytes, shorter than a header")) }
        guard Array(bytes[0..<4]) == magic else { return .failure(.init("not a cache entry (bad magic)")) }
        guard bytes[4] == version else { return .failure(.init("format version \(bytes[4]), expected \(version)")) }
        let payloadLength = Int(clamping: read(UInt64.self, bytes, at: 8))
        let storedHash = bytes[16..<48]
        let keyLength = Int(read(UInt32.self, bytes, at: 48))
        let typeLength = Int(read(UInt16.self, bytes, at: 52))
        let width = Int(Int32(bitPattern: read(UInt32.self, bytes, at: 54)))
        let height = Int(Int32(bitPattern: read(UInt32.self, bytes, at: 58)))
        let expected = headerSize + keyLength + typeLength + payloadLength
        guard expected == bytes.count else {
            return .failure(.init("length \(bytes.count), header says \(expected) (truncated?)"))
        }
        let keyEnd = headerSize + keyLength
        guard bytes[headerSize..<keyEnd].elementsEqual(key.utf8) else {
            return .failure(.init("entry is for another key"))
        }
        let payload = Array(bytes[(keyEnd + typeLength)...])
        guard SHA256.hash(data: payload).elementsEqual(storedHash) else {
            return .failure(.init("payload does not match its SHA-256"))
        }
        let contentType = String(decoding: bytes[keyEnd..<(keyEnd + typeLength)], as: UTF8.self)
        let size = width >= 0 && height >= 0 ? Image.PixelSize(width: width, height: height) : nil
        return .success(Image(data: payload, contentType: contentType, pixelSize: size))
    }

    struct EntryProblem: Swift.Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out += $0 }
    }

    private static func read<T: FixedWidthInteger>(_: T.Type, _ bytes: [UInt8], at offset: Int) -> T {
        var value = T.zero
        for index in 0..<MemoryLayout<T>.size {
            value |= T(bytes[offset + index]) << (8 * index)
        }
        return value
    }
}
