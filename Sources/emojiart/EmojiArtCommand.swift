import ArgumentParser
import EmojiArtApp
import Foundation
import Imaging
import Logging

/// `emojiart`: the gallery server, the web app, terminal sync and image tools in one executable.
@main
struct EmojiArtCommand: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "emojiart",
            abstract: "EmojiArt for Linux: an emoji art gallery, an image cache and the app that shows them.",
            version: imagingVersion,
            subcommands: [
                ServeCommand.self, AppCommand.self, GalleryCommand.self, SyncCommand.self, TrustCommand.self,
                CacheCommand.self, ThumbnailCommand.self, ClusterCommand.self, ImagesCommand.self,
            ],
            defaultSubcommand: ServeCommand.self
        )
    }

    /// Starts libvips before any other thread runs, sends the logs to standard error with control
    /// characters shown, not obeyed (``PrintableLogHandler``), then runs the command; its error,
    /// if any, is printed the same way. libvips' start-up sets
    /// environment variables (`g_setenv`), which must not race with threads reading the
    /// environment; a failure to start is reported by the first command that needs libvips.
    static func main() async {
        _ = try? Imaging.start()
        LoggingSystem.bootstrap(PrintableLogHandler.init)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            // As ArgumentParser's `exit(withError:)`, but a message may carry words from outside
            // (a path, a gallery's entry, a server's reason): shown, never obeyed by the terminal.
            let code = exitCode(for: error)
            let message = TerminalText.printable(fullMessage(for: error), keepingNewlines: true)
            if !message.isEmpty {
                (code == .success ? FileHandle.standardOutput : FileHandle.standardError).write(Data((message + "\n").utf8))
            }
            Foundation.exit(code.rawValue)
        }
    }
}

/// What `--version` prints: the libvips the process runs on (the shared library loaded, not the
/// headers it was built with) and whether its SIMD paths are on.
var imagingVersion: String {
    "emojiart on libvips \(Imaging.libvipsVersion), SIMD \(Imaging.isVectorised ? "on" : "off")"
}

/// Prints a line at once, even when stdout is a pipe or a file (where `print` is block-buffered),
/// so whoever started the process sees the URL to open right away.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
