import Foundation

/// Source images made in the test, so each shows one thing: quadrants of four colours, a
/// detailed patch on a flat field, transparency. PNGs are written by hand (stored deflate
/// blocks, no compression), so nothing but the pixels asked for is in them.
enum TestImages {
    static let red: [UInt8] = [255, 0, 0]
    static let green: [UInt8] = [0, 255, 0]
    static let blue: [UInt8] = [0, 0, 255]
    static let white: [UInt8] = [255, 255, 255]

    /// 640 x 480: red top-left, green top-right, blue bottom-left, white bottom-right.
    static let quadrants = png(width: 640, height: 480) { x, y in
        switch (x < 320, y < 240) {
        case (true, true): red
        case (false, true): green
        case (true, false): blue
        case (false, false): white
        }
    }

    /// 640 x 480 flat grey with a 200 x 200 patch of saturated stripes at the right edge.
    static let patchAtRight = png(width: 640, height: 480) { x, y in
        guard x >= 440, (140..<340).contains(y) else { return [128, 128, 128] }
        return (x / 6 + y / 6) % 2 == 0 ? [255, 40, 0] : [255, 230, 0]
    }

    /// 320 x 240 checkerboard of 4-pixel squares in two greys: all edges.
    static let checker = png(width: 320, height: 240) { x, y in
        (x / 4 + y / 4) % 2 == 0 ? [90, 90, 90] : [170, 170, 170]
    }

    /// 640 x 480 smooth colour gradients.
    static let gradient = png(width: 640, height: 480) { x, y in
        [UInt8(x * 255 / 639), UInt8(y * 255 / 479), UInt8((x + y) * 255 / 1118)]
    }

    /// 200 x 100 RGBA: transparent left half, opaque red right half.
    static let halfTransparent = png(width: 200, height: 100, alpha: true) { x, _ in
        x < 100 ? [0, 0, 0, 0] : [255, 0, 0, 255]
    }

    /// A PNG whose header claims `width` x `height` with a token IDAT: nothing to decode.
    static func claiming(width: UInt32, height: UInt32) -> [UInt8] {
        signature + chunk("IHDR", bigEndian(width) + bigEndian(height) + [8, 2, 0, 0, 0])
            + chunk("IDAT", [0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01]) + chunk("IEND", [])
    }

    /// `jpeg` with an EXIF segment saying `orientation` (1...8) right after its SOI marker.
    static func withOrientation(_ jpeg: [UInt8], _ orientation: UInt16) -> [UInt8] {
        // TIFF, big-endian: one IFD of one SHORT entry, tag 0x0112 (Orientation).
        let tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1]
            + [UInt8(orientation >> 8), UInt8(orientation & 0xFF), 0, 0, 0, 0, 0, 0]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = UInt16(payload.count + 2)
        return Array(jpeg[0..<2]) + [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload + Array(jpeg[2...])
    }

    /// An 8-bit PNG of `width` x `height`, RGB or RGBA, each pixel from `pixel`.
    static func png(width: Int, height: Int, alpha: Bool = false, _ pixel: (Int, Int) -> [UInt8]) -> [UInt8] {
        var raw: [UInt8] = []
        raw.reserveCapacity(height * (1 + width * (alpha ? 4 : 3)))
        for y in 0..<height {
            raw.append(0)  // filter: none
            for x in 0..<width { raw += pixel(x, y) }
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var start = 0
        repeat {
            let end = min(start + 65_535, raw.count)
            let count = UInt16(end - start)
            zlib += [end == raw.count ? 1 : 0, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8(~count >> 8)]
            zlib += raw[start..<end]
            start = end
        } while start < raw.count
        zlib += bigEndian(adler32(raw))
        let header = bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, alpha ? 6 : 2, 0, 0, 0]
        return signature + chunk("IHDR", header) + chunk("IDAT", zlib) + chunk("IEND", [])
    }

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }

    /// A GIF of `frames` frames of 1 x 1 pixel, looping: black, white, black...
    static func animatedGIF(frames: Int) -> [UInt8] {
        var gif = Array("GIF89a".utf8) + [1, 0, 1, 0, 0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
        gif += [0x21, 0xFF, 0x0B] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]  // loop forever
        for frame in 0..<frames {
            gif += [0x21, 0xF9, 4, 0, 10, 0, 0, 0]  // 0.1 s a frame
            gif += [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0]
            // LZW, 2-bit minimum code size: clear, the pixel's index, end; 3-bit codes, LSB first.
            gif += frame % 2 == 0 ? [2, 2, 0x44, 0x01, 0] : [2, 2, 0x4C, 0x01, 0]
        }
        return gif + [0x3B]
    }
}
