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
    /// AVIF: about a ninth of the PNG's bytes; slow to encode (about three PNGs' time), so a
    /// first request is answered with a faster format while it is made (see ``isSlowToEncode``).
    case avif
    /// WebP (lossy, at quality 97 with smart chroma subsampling: below that the art's gradients
    /// pass the bound): under a third of the PNG's bytes.
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

    /// Whether a variant in this format is too slow to make while a person waits for it: a
    /// request for one not yet made is answered with the next format the client accepts, made
    /// at once and marked so no cache keeps it, while this one is made in the background.
    public var isSlowToEncode: Bool { self == .avif }

    /// `avif`, `webp` or `png`.
    public var description: String { rawValue }

    /// Parses a comma-separated list such as `avif,webp,png` (the `--formats` option).
    /// - Throws: ``ListError`` for an unknown name, a repeated one, or a list without `png`
    ///   (the format every client accepts).
    public static func list(_ text: String) throws(ListError) -> [ServedFormat] {
        var formats: [ServedFormat] = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = name.trimmingSpaces.lowercased()
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
        // No browser sends more than a few hundred bytes; a longer field is not read (its
        // elements would cost an allocation each, on the event loop).
        guard let accept, accept.utf8.count <= maxAcceptLength else { return .png }
        var exact: [ServedFormat: Double] = [:]
        var anyImage: Double?
        var anything: Double?
        for element in accept.split(separator: ",") {
            let parts = element.split(separator: ";")
            guard let range = parts.first?.trimmingSpaces.lowercased(), !range.isEmpty else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingSpaces.lowercased() == "q" else { continue }
                // RFC 9110: 0 to 1 with at most three decimals; anything else counts as 0,
                // the safe reading of a value nobody can interpret.
                quality = Self.qValue(pair[1].trimmingSpaces) ?? 0
            }
            switch range {
            case "*/*": anything = max(anything ?? 0, quality)
            case "image/*": anyImage = max(anyImage ?? 0, quality)
            default:
                if let format = ServedFormat.allCases.first(where: { $0.mediaType == range }) {
                    exact[format] = max(exact[format] ?? 0, quality)
                }
            }
        }
        var best = ServedFormat.png
        var bestQuality = 0.0
        for format in offered.sorted(by: { $0.rank < $1.rank }) {
            let quality = format == .png ? exact[.png] ?? anyImage ?? anything ?? 0 : exact[format] ?? 0
            if quality > bestQuality {
                (best, bestQuality) = (format, quality)
            }
        }
        return best
    }

    /// The longest `Accept` field ``negotiate(_:offered:)`` reads; PNG for a longer one.
    static let maxAcceptLength = 2048

    /// A q-value as RFC 9110 writes it: `0`, `1`, `0.` or `1.` and up to three digits (1's all
    /// zeros); `nil` for anything else.
    static func qValue(_ text: String) -> Double? {
        let utf8 = Array(text.utf8)
        guard let first = utf8.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1") else { return nil }
        guard utf8.count > 1 else { return first == UInt8(ascii: "1") ? 1 : 0 }
        guard utf8[1] == UInt8(ascii: "."), utf8.count <= 5 else { return nil }
        let digits = utf8.dropFirst(2)
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        if first == UInt8(ascii: "1") { return digits.allSatisfy { $0 == UInt8(ascii: "0") } ? 1 : nil }
        return Double(text)
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
