import Foundation
import HTTPCaching
import ImageCache
import Synchronization

/// The catalog's pages as rendered: each page is rendered once per edition of what it shows (the
/// entries and their statuses, the counts, the feed's key and origin, the staleness of its
/// prices) and answered from memory after that, with an `ETag` of that edition. A load of a
/// 3,564-entry catalog then costs what a load of an 87-entry one does.
///
/// The cache counters in the toolbar change with every image request: a page is kept with a
/// marker in their place and each answer puts the current counts in (``Rendered/filled(_:)``).
/// The markers hold a random token of this process, which no feed text can spell.
///
/// Thread-safe: one `Mutex` over the pages of the current edition (older ones are dropped).
final class CatalogPages: Sendable {
    /// What a page shows, besides the counters: equal keys render the same bytes.
    struct Key: Hashable, Sendable {
        var page: Int
        var edition: Edition
    }

    /// What every page of one catalog depends on.
    struct Edition: Hashable, Sendable {
        /// ``EmojiArtModel/catalogEdits`` when the page was rendered.
        var edits: Int
        var progress: VerificationProgress
        var feedKey: EmojiArtModel.FeedKey?
        var feedOrigin: EmojiArtModel.FeedOrigin?
        /// Anything else a page states that changes with time (the prices' staleness).
        var extra: String = ""
    }

    /// A page kept: its text cut at the counters, and its `ETag`.
    struct Rendered: Sendable {
        /// Text and counter names, alternately: text, counter, text, ..., text.
        let pieces: [Substring]
        /// A strong `ETag` of this page's edition (the counters are not part of it: a browser's
        /// copy shows the counters of its time, which the page's event stream updates).
        let etag: String

        /// The page with `counts` (by counter name) in place of the markers.
        func filled(_ counts: [String: Int]) -> String {
            var text = ""
            text.reserveCapacity(pieces.reduce(0) { $0 + $1.utf8.count } + 64)
            for (index, piece) in pieces.enumerated() {
                text += index.isMultiple(of: 2) ? String(piece) : String(counts[String(piece)] ?? 0)
            }
            return text
        }
    }

    /// The markers' token: random per process.
    let token = "counter-" + Hex.lowercase((0..<12).map { _ in UInt8.random(in: 0...255) }) + "-"
    private let pages = Mutex<(edition: Edition?, byPage: [Int: Rendered])>((nil, [:]))
    /// Pages rendered so far (kept with ``keep(_:for:)``): a load answered from memory adds none.
    let renders = Atomic<Int>(0)

    /// The counter values to render a kept page with: markers around each counter's name.
    func markers(_ names: [String]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: names.map { ($0, token + $0 + "-") })
    }

    /// The kept page for `key`, if any.
    func page(_ key: Key) -> Rendered? {
        pages.withLock { $0.edition == key.edition ? $0.byPage[key.page] : nil }
    }

    /// Keeps `html` (rendered with ``markers(_:)``) for `key`, dropping other editions' pages.
    @discardableResult
    func keep(_ html: String, for key: Key) -> Rendered {
        let rendered = Rendered(pieces: cut(html), etag: "\"" + String(SHA256Hex.digest(Array(html.utf8)).prefix(32)) + "\"")
        pages.withLock { state in
            if state.edition != key.edition { state = (key.edition, [:]) }
            state.byPage[key.page] = rendered
        }
        renders.add(1, ordering: .relaxed)
        return rendered
    }

    /// Forgets every page (the templates' inputs changed in a way no key shows).
    func removeAll() {
        pages.withLock { $0 = (nil, [:]) }
    }

    /// `html` cut at each marker: text, name, text, ..., text.
    private func cut(_ html: String) -> [Substring] {
        var pieces: [Substring] = []
        var rest = html[...]
        while let start = rest.range(of: token) {
            pieces.append(rest[..<start.lowerBound])
            let after = rest[start.upperBound...]
            guard let end = after.firstIndex(of: "-") else { break }
            pieces.append(after[..<end])
            rest = after[after.index(after: end)...]
        }
        pieces.append(rest)
        return pieces
    }
}
