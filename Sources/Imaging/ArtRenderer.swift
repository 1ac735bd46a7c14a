import CVips

/// Draws the gallery's emoji art: a diagonal gradient with one large colour emoji on it,
/// encoded as PNG.
///
/// Synchronous CPU work (a few milliseconds a piece); safe to call from many tasks at once.
public struct ArtRenderer: Sendable {
    /// The three gradients of the book's gallery, chosen by piece number `N % 3`.
    public enum Palette: Int, Sendable, CaseIterable {
        /// Pink at the top left to teal at the bottom right.
        case pinkToTeal = 0
        /// Red to yellow.
        case redToYellow = 1
        /// Cyan to indigo.
        case cyanToIndigo = 2

        /// The palette of piece `number`.
        public init(piece number: Int) {
            self = Palette(rawValue: ((number % 3) + 3) % 3)!
        }

        /// Start (top-left) and end (bottom-right) colours as RGB.
        public var colors: (start: [Double], end: [Double]) {
            switch self {
            case .pinkToTeal: ([255, 105, 180], [0, 128, 128])
            case .redToYellow: ([220, 20, 60], [255, 215, 0])
            case .cyanToIndigo: ([0, 255, 255], [75, 0, 130])
            }
        }
    }

    /// Width of every piece, as in the book's server.
    public static let width = 360
    /// Height of every piece, as in the book's server.
    public static let height = 650

    /// Font size of the emoji in pixels.
    public var emojiSize: Int

    /// Creates a renderer drawing emoji `emojiSize` pixels tall.
    public init(emojiSize: Int = 220) {
        self.emojiSize = emojiSize
    }

    /// Renders `emoji` on `palette`'s gradient as an RGB PNG of 360x650.
    /// - Parameters:
    ///   - emoji: the text to draw, usually one emoji.
    ///   - palette: the background gradient.
    ///   - shift: pixels the emoji sits below the centre (negative: above); the gallery's
    ///     revisions move it to make new art of the same piece.
    /// - Throws: ``Imaging/Error/encodeFailed(format:detail:)`` when libvips cannot draw the text
    ///   (for example when the Noto Color Emoji font is missing: run scripts/bootstrap).
    public func render(emoji: String, palette: Palette, shift: Int = 0) throws(Imaging.Error) -> [UInt8] {
        try Imaging.start()
        let (width, height) = (Self.width, Self.height)
        let gradient = try Self.gradient(width: width, height: height, palette: palette)
        // pango's size is in points; at 72 dpi one point is one pixel.
        let glyph = try VipsImage.make("emoji text") {
            cvips_text_rgba($0, emoji, "Noto Color Emoji \(emojiSize)", 72)
        }
        guard glyph.width > 1, glyph.hasAlpha else {
            throw .encodeFailed(format: "emoji text", detail: "no colour glyph for \(emoji): is fonts-noto-color-emoji installed?")
        }
        let x = (width - glyph.width) / 2
        let y = min(max(0, (height - glyph.height) / 2 + shift), max(0, height - glyph.height))
        let composed = try VipsImage.make("composite") {
            cvips_composite2_over(gradient.pointer, glyph.pointer, $0, Int32(x), Int32(y))
        }
        let rgb = try VipsImage.make("extract RGB") { cvips_extract_band(composed.pointer, $0, 0, 3) }
        let opaque = try VipsImage.make("cast") { cvips_cast_uchar(rgb.pointer, $0) }
        return try opaque.encode(.png)
    }

    /// t = (x / width + y / height) / 2 runs 0...1 along the diagonal; colour = start + t * (end - start).
    static func gradient(width: Int, height: Int, palette: Palette) throws(Imaging.Error) -> VipsImage {
        let xy = try VipsImage.make("xyz") { cvips_xyz($0, Int32(width), Int32(height)) }
        let scale = [1 / Double(width - 1), 1 / Double(height - 1)]
        let zero = [0.0, 0.0]
        let scaled = try VipsImage.make("linear") { cvips_linear(xy.pointer, $0, scale, zero, 2) }
        let t = try VipsImage.make("bandmean") { cvips_bandmean(scaled.pointer, $0) }
        let (start, end) = palette.colors
        let span = zip(start, end).map { $1 - $0 }
        let coloured = try VipsImage.make("linear") { cvips_linear(t.pointer, $0, span, start, 3) }
        return try VipsImage.make("cast") { cvips_cast_uchar(coloured.pointer, $0) }
    }
}
