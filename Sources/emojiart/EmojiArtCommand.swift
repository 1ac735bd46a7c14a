import ArgumentParser

/// `emojiart`: the gallery server, the web app, terminal sync and image tools in one executable.
@main
struct EmojiArtCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emojiart",
        abstract: "EmojiArt for Linux: an emoji art gallery, an image cache and the app that shows them.",
        subcommands: [GalleryCommand.self, ThumbnailCommand.self]
    )
}
