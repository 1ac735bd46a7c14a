import HTTPCaching
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
    /// WebP (lossy, at quality 97 with sharp YUV at 1x: below that the art's gradients pass
    /// the bound): under a third of the PNG's bytes; its encode takes about four PNG encodes'
    /// time (the sharp YUV is most of it), so it is not made while a request waits either. At
    /// 2x the bound holds without sharp YUV (1.34 levels at worst on the gallery's art, against
    /// 2.27 at 1x): half the encode time, and 5 % fewer bytes.
    case webp
    /// Lossless PNG: what every client takes.
    case png

    /// The settings the 1x variant is encoded with.
    public var output: OutputFormat { output(density: 1) }

    /// The settings the variant at `density` is encoded with.
    public func output(density: Int) -> OutputFormat {
        switch self {
        case .avif: .avif(quality: 60, effort: 2)
        case .webp: .webp(quality: 97, sharpYUV: density < 2)
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
            let trimmed = String(Substring(WeightedPreferences.trimmed(name.utf8))).lowercased()
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
    /// longer than ``WeightedPreferences/maxLength`` (2 KiB), which is not read.
    public static func negotiate(_ accept: String?, offered: [ServedFormat]) -> ServedFormat {
        // Weights in thousandths (WeightedPreferences); -1: not named.
        var avif = -1, webp = -1, png = -1, anyImage = -1, anything = -1
        for preference in WeightedPreferences(accept) {
            let weight = preference.weight
            if preference.names("*/*") { anything = max(anything, weight) }
            else if preference.names("image/*") { anyImage = max(anyImage, weight) }
            else if preference.names("image/avif") { avif = max(avif, weight) }
            else if preference.names("image/webp") { webp = max(webp, weight) }
            else if preference.names("image/png") { png = max(png, weight) }
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
}
