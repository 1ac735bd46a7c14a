import EmojiArtApp
import Testing

@Suite struct TerminalTextTests {
    @Test func barFillsWithProgress() {
        var progress = VerificationProgress(total: 4)
        #expect(TerminalText.bar(progress, width: 8) == "[░░░░░░░░] 0/4 0%")
        progress.completed = 2
        #expect(TerminalText.bar(progress, width: 8) == "[████░░░░] 2/4 50%")
        progress.completed = 4
        #expect(TerminalText.bar(progress, width: 8) == "[████████] 4/4 100%")
    }
}
