import ArgumentParser
import EmojiArtApp
import Foundation
import Imaging

/// An error whose message is printed, with exit status 1. Its message may carry a gallery's
/// words (a feed's entry, a server's reason): control characters are shown, not obeyed
/// (`TerminalText.printable`).
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = TerminalText.printable(message, keepingNewlines: true) }
}
