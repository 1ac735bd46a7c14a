@testable import EmojiArtApp
import GalleryFeed
import ImageCache
import Testing
import TestSupport

@Suite struct TerminalTextTests {
    @Test func barFillsWithProgress() {
        var progress = VerificationProgress(total: 4)
        #expect(TerminalText.bar(progress, width: 8) == "[░░░░░░░░] 0/4 0%")
        progress.completed = 2
        #expect(TerminalText.bar(progress, width: 8) == "[████░░░░] 2/4 50%")
        progress.completed = 4
        #expect(TerminalText.bar(progress, width: 8) == "[████████] 4/4 100%")
    }

    /// A hostile gallery's name for a piece that failed: erase the line, go back, print a forged
    /// "all good" in green, retitle the window, write the clipboard, a C1 CSI, a new line, and a
    /// right-to-left override. The summary shows every one of them, obeys none.
    @Test func aGallerysWordsAreShownNotObeyed() async {
        let hostile = "Innocent\u{1B}[2K\r\u{1B}[32mverified 87 (all good)\u{1B}]0;owned\u{07}\u{1B}]52;c;aGk=\u{07}\u{9B}31m\nforged line\u{202E}gnp.exe"
        let directory = TemporaryDirectory()
        let report = Sync.Report(
            progress: VerificationProgress(total: 1), thumbnails: 0,
            stats: await ImagePipeline(configuration: .init(diskDirectory: directory.url)).stats(), duration: .seconds(1),
            problems: [(ImageFile(name: hostile, url: "http://127.0.0.1/gallery/image?7\u{1B}[8m", price: 1, checksum: ""), .failed("the server said \u{1B}[41mno"))],
            feedKey: nil, feedOrigin: nil
        )
        let summary = TerminalText.summary(report)
        let unprintable = summary.unicodeScalars.filter {
            ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value)
        }
        #expect(unprintable.isEmpty, "\(unprintable.map { String($0.value, radix: 16) })")
        let problemLines = summary.split(separator: "\n").filter { $0.contains("Innocent") }
        #expect(problemLines.count == 1, "the name's line break is shown in its line")
        #expect(problemLines.first?.contains("forged line") == true)
        #expect(problemLines.first?.contains("the server said \u{FFFD}[41mno") == true)
        #expect(!summary.split(separator: "\n").contains { $0.hasPrefix("forged line") })
    }

    @Test func printableKeepsWhatIsText() {
        #expect(TerminalText.printable("Sunflower 🌻, naïve, 日本, tab\there") == "Sunflower 🌻, naïve, 日本, tab\u{FFFD}here")
        #expect(TerminalText.printable("two\nlines", keepingNewlines: true) == "two\nlines")
        #expect(TerminalText.printable("two\nlines") == "two\u{FFFD}lines")
        #expect(TerminalText.printable("\u{2067}isolate\u{2069}") == "\u{FFFD}isolate\u{FFFD}")
    }
}
