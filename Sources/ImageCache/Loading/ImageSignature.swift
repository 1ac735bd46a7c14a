/// The image formats the cache knows by their first bytes (their signature, or "magic number"),
/// as browsers and libvips tell them apart: what an origin answers is an image only when its
/// bytes begin as one, whatever its `Content-Type` says. A 5-byte text file, an HTML page or a
/// JSON error body is refused before it is answered or kept
/// (``ImagePipeline/Error/notAnImage(url:contentType:)``), unless the request takes any bytes
/// (``ImageRequest/acceptsAnyData``).
enum ImageSignature: String, CaseIterable, Sendable {
    case png, jpeg, gif, webp, avif, heif, jpegXL = "jpeg-xl", tiff, bmp, ico, svg

    /// The format `bytes` begin as, or `nil` when they begin as none the cache knows. Reads at
    /// most the first 1 KiB; every offset is checked against the count first.
    static func format(of bytes: UnsafeRawBufferPointer) -> ImageSignature? {
        func starts(with prefix: [UInt8], at offset: Int = 0) -> Bool {
            guard bytes.count >= offset + prefix.count else { return false }
            for (index, byte) in prefix.enumerated() where bytes[offset + index] != byte { return false }
            return true
        }
        if starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(with: Array("GIF87a".utf8)) || starts(with: Array("GIF89a".utf8)) { return .gif }
        if starts(with: Array("RIFF".utf8)), starts(with: Array("WEBP".utf8), at: 8) { return .webp }
        if starts(with: Array("ftyp".utf8), at: 4) { return isoMediaFormat(bytes) }
        if starts(with: [0xFF, 0x0A]) || starts(with: [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) { return .jpegXL }
        if starts(with: [0x49, 0x49, 0x2A, 0x00]) || starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        // "BM", then a file size and two reserved zero words: plain text starting "BM" is not one.
        if starts(with: [0x42, 0x4D]), bytes.count >= 14, bytes[6] == 0, bytes[7] == 0, bytes[8] == 0, bytes[9] == 0 { return .bmp }
        if starts(with: [0, 0, 1, 0]), bytes.count >= 6, bytes[4] != 0 || bytes[5] != 0 { return .ico }
        if isSVG(bytes) { return .svg }
        return nil
    }

    /// An ISO base media file (`ftyp` box): AVIF or HEIF by its major or compatible brands;
    /// a video (MP4, QuickTime) is none.
    private static func isoMediaFormat(_ bytes: UnsafeRawBufferPointer) -> ImageSignature? {
        guard bytes.count >= 16 else { return nil }
        let boxSize = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        // The major brand at 8, the minor version at 12, compatible brands from 16 to the box's end.
        let end = min(max(boxSize, 16), bytes.count, 1024)
        var brands = [brand(bytes, at: 8)]
        var offset = 16
        while offset + 4 <= end {
            brands.append(brand(bytes, at: offset))
            offset += 4
        }
        if brands.contains(where: { $0 == "avif" || $0 == "avis" }) { return .avif }
        if brands.contains(where: { ["heic", "heix", "heim", "heis", "mif1", "msf1"].contains($0) }) { return .heif }
        return nil
    }

    private static func brand(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + 4]), as: UTF8.self)
    }

    /// SVG: text whose first element is `<svg`, after an optional byte-order mark, white space,
    /// an XML declaration, comments and a doctype (all within the first 1 KiB). An HTML page
    /// that holds an `<svg>` is HTML.
    private static func isSVG(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let head = Array(bytes.prefix(1024))
        var index = head.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        func skipSpace() { while index < head.count, [0x20, 0x09, 0x0A, 0x0D].contains(head[index]) { index += 1 } }
        func at(_ text: String) -> Bool { head[index...].starts(with: Array(text.utf8)) }
        func skip(past end: String) -> Bool {
            let terminator = Array(end.utf8)
            while index + terminator.count <= head.count {
                if head[index...].starts(with: terminator) {
                    index += terminator.count
                    return true
                }
                index += 1
            }
            return false
        }
        while true {
            skipSpace()
            if at("<?xml") || at("<!DOCTYPE svg") || at("<!doctype svg") {
                guard skip(past: ">") else { return false }
            } else if at("<!--") {
                guard skip(past: "-->") else { return false }
            } else {
                guard at("<svg"), index + 4 < head.count else { return false }
                return [0x20, 0x09, 0x0A, 0x0D, 0x3E, 0x2F].contains(head[index + 4])  // "<svg " or "<svg>"
            }
        }
    }
}
