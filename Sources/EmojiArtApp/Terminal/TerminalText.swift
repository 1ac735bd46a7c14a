import Foundation
import GalleryFeed
import ImageCache

/// Text rendering for terminals.
public enum TerminalText {
    /// `[██████░░░░░░]  45/87  52%` for a TTY.
    public static func bar(_ progress: VerificationProgress, width: Int = 30) -> String {
        let width = max(0, width)
        // Held to 0...1 (NaN to 0) before any conversion: counts from elsewhere cannot trap here.
        let fraction = progress.fraction >= 0 ? min(progress.fraction, 1) : 0
        let filled = Int((fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let percent = Int((fraction * 100).rounded(.down))
        return "[\(bar)] \(progress.completed)/\(progress.total) \(percent)%"
    }

    /// The summary table printed at the end of a sync.
    ///
    /// Its origin rows count what happened to each request sent to the gallery for an image:
    /// `origin fetches` is the sum of `downloaded` (a body came), `not modified` (304),
    /// `not found` (404 or 410), `error answers` (another status) and `no answer` (refused,
    /// timed out, broken). `known missing` counts pieces answered missing from a stored 404
    /// without asking; `changed` counts the downloads that replaced a stale entry.
    public static func summary(_ report: Sync.Report) -> String {
        let stats = report.stats
        let seconds = Double(report.duration.components.seconds) + Double(report.duration.components.attoseconds) / 1e18
        var rows: [(String, String)] = [
            ("verified", "\(report.progress.verified)"),
            ("missing", "\(report.progress.missing)"),
            ("mismatched", "\(report.progress.mismatched)"),
            ("failed", "\(report.progress.failed)"),
            ("thumbnails", "\(report.thumbnails)"),
            ("memory hits", "\(stats.memoryHits)"),
            ("disk hits", "\(stats.diskHits)"),
            ("known missing", "\(stats.knownMissing)"),
            ("origin fetches", "\(stats.originFetches)"),
            ("downloaded", "\(stats.downloads)"),
            ("not modified", "\(stats.revalidations)"),
            ("not found", "\(stats.missingAnswers)"),
            ("error answers", "\(stats.errorAnswers)"),
            ("no answer", "\(stats.unanswered)"),
            ("changed", "\(stats.refreshed)"),
            ("time", String(format: "%.2f s", seconds)),
        ]
        if let variants = report.variants { rows.insert(("variants", "\(variants) of \(report.variantsPlanned ?? variants)"), at: 5) }
        if report.progress.notCached > 0 { rows.insert(("not cached", "\(report.progress.notCached)"), at: 4) }
        if stats.staleAnswers > 0 { rows.append(("stale answers", "\(stats.staleAnswers)")) }
        if stats.corruptEntries > 0 { rows.append(("dropped", "\(stats.corruptEntries)")) }
        if let key = report.feedKey { rows.append(("feed key", key.fingerprint)) }
        if stats.diskFailures > 0 { rows.append(("disk failures", "\(stats.diskFailures)")) }
        let width = rows.map(\.0.count).max() ?? 0
        var lines = rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
        var listed = Set<String>()
        for problem in report.problems where problem.status != .missing && listed.insert(problem.file.url).inserted {
            lines.append("  \(problem.file.url) \(problem.file.name): \(problem.status.explanation)")
        }
        // The pieces the gallery does not have, each once (the feed lists a piece three times).
        var missing: [ImageFile] = []
        for problem in report.problems where problem.status == .missing && listed.insert(problem.file.url).inserted {
            missing.append(problem.file)
        }
        missing.sort { ($0.pieceNumber ?? .max, $0.url) < ($1.pieceNumber ?? .max, $1.url) }
        if !missing.isEmpty {
            lines.append("missing from the gallery (404, expected): " + missing.map(\.url).joined(separator: ", "))
        }
        switch report.feedOrigin {
        case let .galleryUnreachable(reason):
            lines.append("the gallery is unreachable (\(reason)): the catalog and images came from the cache")
        case .offline:
            lines.append("offline: nothing was sent; the catalog and images came from the cache")
        case .revalidated:
            lines.append("the feed is unchanged (a signed 304): the stored copy was used")
        case .notReauthenticated:
            lines.append(report.feedOrigin?.notReauthenticatedText ?? "")
        case .downloaded, nil:
            break
        }
        // When the catalog was last authenticated; past its signature's life, its prices are
        // said to be as of then, online or offline.
        if let age = report.feedAge { lines.append(age.text(at: report.finishedAt)) }
        if report.feedKey?.trustedOnFirstUse == true {
            lines.append("first contact with this gallery: its key is trusted from now on (`emojiart trust --gallery URL` accepts a new one)")
        }
        if stats.corruptEntries > 0 {
            let entries = stats.corruptEntries == 1 ? "entry" : "entries"
            lines.append("dropped \(stats.corruptEntries) damaged cache \(entries) (deleted and fetched again)")
        }
        // Names, URLs and reasons come from the gallery: each line is shown, never obeyed.
        return lines.map { printable($0) }.joined(separator: "\n")
    }

    /// `text` with every control character (C0 with tab and line breaks, DEL, C1) and every
    /// bidirectional override or isolate replaced by U+FFFD: text from a gallery (a piece's name,
    /// a URL, an error's reason) printed to a terminal cannot erase or forge lines, recolour, set
    /// the window's title, write the clipboard (OSC 52), or reorder what is shown.
    /// - Parameter keepingNewlines: keep `\n`, for a message of several lines made here.
    public static func printable(_ text: String, keepingNewlines: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isUnprintable($0, keepingNewlines) }) else { return text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(isUnprintable(scalar, keepingNewlines) ? "\u{FFFD}" : scalar)
        }
        return String(scalars)
    }

    private static func isUnprintable(_ scalar: Unicode.Scalar, _ keepingNewlines: Bool) -> Bool {
        switch scalar.value {
        case 0x0A: !keepingNewlines
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069: true  // embeddings, overrides, isolates
        default: false
        }
    }
}
