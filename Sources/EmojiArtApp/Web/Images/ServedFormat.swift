public import Imaging

/// An encoding the image routes can answer with, chosen per request from its `Accept` field
/// (``negotiate(_:offered:)``).
///
/// The encoders' settings were chosen by measurement (docs/benchmarks.md, "Formats"): the
/// smallest file whose mean absolute difference from the PNG thumbnail, in premultiplied 8-bit
/// levels, stays at or below 2 on twenty pieces of the gallery's art and on the soft-edges
/// fixture (alpha edges included), at the 200 px box where it is largest. Both keep full
/// chroma resolution: subsampled chroma smears the art's coloured edges past that bound.
public enum ServedFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// AVIF: about a ninth of the PNG's bytes; slow to encode (about seven PNG encodes' time at
    /// 200 px), so it is never made while a request waits (see ``isQuickToEncode``).
    case avif
    /// WebP (lossy, at quality 97 with smart chroma subsampling: below that the art's gradients
    /// pass the bound): under a third of the PNG's bytes; its encode takes about four PNG
    /// encodes' time (the smart subsampling is most of it), so it is not made while a request
    /// waits either.
    case webp
    /// Lossless PNG: what every client takes.
    case png

    /// The settings the variant is encoded with.
    public var output: OutputFormat {
        switch self {
        case .avif: .avif(quality: 60, effort: 2)
        case .webp: .webp(quality: 97)
        case .png: .png
        }
    }

    /// The media type in `Accept` and `Content-Type`.
    public var mediaType: String { "image/\(rawValue)" }

    /// Whether a variant in this format is made while a request waits for it: PNG only, which
    /// keeps a piece's first request as quick as a PNG-only app's. A request for a variant in
    /// another format not made yet is answered at once with the best format the client accepts
    /// that is made (PNG, made then, when none is), marked so no cache keeps it, while its own
    /// format is made in the background.
    public var isQuickToEncode: Bool { self == .png }

    /// `avif`, `webp` or `png`.
    public var description: String { rawValue }

    /// Parses a comma-separated list such as `avif,webp,png` (the `--formats` option).
    /// - Throws: ``ListError`` for an unknown name, a repeated one, or a list without `png`
    ///   (the format every client accepts).
    public static func list(_ text: String) throws(ListError) -> [ServedFormat] {
        var formats: [ServedFormat] = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = String(Substring(Self.trimmed(name.utf8))).lowercased()
            guard let format = ServedFormat(rawValue: trimmed) else { throw ListError(text: text, problem: "unknown format \"\(trimmed)\"") }
            guard !formats.contains(format) else { throw ListError(text: text, problem: "\(trimmed) is listed twice") }
            formats.append(format)
        }
        guard formats.contains(.png) else { throw ListError(text: text, problem: "png must be listed: it is what a client that accepts neither gets") }
        return formats.sorted { $0.rank < $1.rank }
    }

    /// A `--formats` list that cannot be used.
    public struct ListError: Error, Sendable, CustomStringConvertible {
        /// The list as given.
        public let text: String
        /// What is wrong with it.
        public let problem: String
        /// What happened and what to do.
        public var description: String { "--formats \"\(text)\": \(problem); give some of avif, webp, png, comma-separated, png included" }
    }

    /// The order of preference among formats a client accepts equally: the smaller first.
    var rank: Int {
        switch self {
        case .avif: 0
        case .webp: 1
        case .png: 2
        }
    }

    /// The format to answer a request whose `Accept` field (all its lines joined with commas)
    /// is `accept`, among `offered`.
    ///
    /// AVIF and WebP only when the client names them (`image/avif`, `image/webp`) with a
    /// q-value above 0: a wildcard is no promise that a client decodes them (`curl` and many
    /// libraries send `*/*`). PNG's q-value is that of the most specific range that matches it
    /// (`image/png`, then `image/*`, then `*/*`; 1 with no `Accept` at all). The highest
    /// q-value wins, and among equal ones the smaller format; PNG when nothing offered is
    /// accepted (a client that refuses every format still gets the image), or when the field is
    /// longer than 2 KiB.
    public static func negotiate(_ accept: String?, offered: [ServedFormat]) -> ServedFormat {
        // Read in place, byte by byte: it runs on the event loop for every image request, and
        // allocates nothing. No browser sends more than a few hundred bytes; a longer field is
        // not read.
        guard let accept, accept.utf8.count <= maxAcceptLength else { return .png }
        // Qualities in thousandths, as RFC 9110 writes them (three decimals at most); -1: not named.
        var avif = -1, webp = -1, png = -1, anyImage = -1, anything = -1
        var rest = accept.utf8[...]
        while !rest.isEmpty {
            let end = Self.firstUnquoted(UInt8(ascii: ","), in: rest)
            let element = rest[..<end]
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
            let rangeEnd = element.firstIndex(of: UInt8(ascii: ";")) ?? element.endIndex
            let range = Self.trimmed(element[..<rangeEnd])
            var quality = 1000
            var parameters = element[rangeEnd...]
            while parameters.first == UInt8(ascii: ";") {
                parameters = parameters.dropFirst()
                let parameterEnd = Self.firstUnquoted(UInt8(ascii: ";"), in: parameters)
                let parameter = parameters[..<parameterEnd]
                parameters = parameters[parameterEnd...]
                guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")),
                      Self.matches(Self.trimmed(parameter[..<equals]), "q")
                else { continue }
                // RFC 9110: 0 to 1 with at most three decimals; anything else counts as 0,
                // the safe reading of a value nobody can interpret.
                quality = Self.qValue(Self.trimmed(parameter[parameter.index(after: equals)...])) ?? 0
            }
            if Self.matches(range, "*/*") { anything = max(anything, quality) }
            else if Self.matches(range, "image/*") { anyImage = max(anyImage, quality) }
            else if Self.matches(range, "image/avif") { avif = max(avif, quality) }
            else if Self.matches(range, "image/webp") { webp = max(webp, quality) }
            else if Self.matches(range, "image/png") { png = max(png, quality) }
        }
        // PNG by the most specific range that names it.
        let pngQuality = png >= 0 ? png : anyImage >= 0 ? anyImage : max(anything, 0)
        var best = ServedFormat.png
        var bestQuality = 0
        for format in offered {
            let quality = switch format {
            case .avif: avif
            case .webp: webp
            case .png: pngQuality
            }
            if quality > bestQuality || (quality == bestQuality && quality > 0 && format.rank < best.rank) {
                (best, bestQuality) = (format, quality)
            }
        }
        return best
    }

    /// The longest `Accept` field ``negotiate(_:offered:)`` reads; PNG for a longer one.
    static let maxAcceptLength = 2048

    /// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
    static func trimmed(_ text: Substring.UTF8View) -> Substring.UTF8View {
        var text = text
        while let first = text.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { text = text.dropFirst() }
        while let last = text.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { text = text.dropLast() }
        return text
    }

    /// The index of the first `separator` in `text` outside a quoted string (a parameter's value
    /// may be one, and hold commas and semicolons: RFC 9110 5.6.4, `\` escaping the next byte),
    /// or the end.
    static func firstUnquoted(_ separator: UInt8, in text: Substring.UTF8View) -> Substring.UTF8View.Index {
        var quoted = false
        var escaped = false
        var index = text.startIndex
        while index != text.endIndex {
            let byte = text[index]
            if escaped {
                escaped = false
            } else if quoted {
                if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { quoted = false }
            } else if byte == UInt8(ascii: "\"") {
                quoted = true
            } else if byte == separator {
                return index
            }
            text.formIndex(after: &index)
        }
        return index
    }

    /// Whether `text` is `lowercase`, ignoring ASCII case.
    static func matches(_ text: Substring.UTF8View, _ lowercase: StaticString) -> Bool {
        guard text.count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            zip(text, expected).allSatisfy { byte, want in
                (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == want
            }
        }
    }

    /// A q-value as RFC 9110 writes it, in thousandths: `0`, `1`, `0.` or `1.` and up to three
    /// digits (1's all zeros); `nil` for anything else.
    static func qValue(_ text: Substring.UTF8View) -> Int? {
        guard let first = text.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1") else { return nil }
        let whole = Int(first - UInt8(ascii: "0")) * 1000
        let afterFirst = text.dropFirst()
        guard let point = afterFirst.first else { return whole }
        let digits = afterFirst.dropFirst()
        guard point == UInt8(ascii: "."), digits.count <= 3,
              digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        var fraction = 0
        var scale = 100
        for digit in digits {
            fraction += Int(digit - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        guard whole == 0 || fraction == 0 else { return nil }
        return whole + fraction
    }
}
