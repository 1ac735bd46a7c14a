import ArgumentParser
import EmojiArtApp
import Foundation
import ImageCache
import Logging

/// `--cache-dir`, shared by the commands that use the cache.
struct CacheOptions: ParsableArguments {
    @Option(help: "Cache directory (default: $XDG_CACHE_HOME/emojiart or ~/.cache/emojiart).")
    var cacheDir: String?

    var directory: URL {
        cacheDir.map { URL(fileURLWithPath: $0) } ?? Self.defaultDirectory
    }

    /// The app's own directory: `$XDG_CACHE_HOME/emojiart`, else `~/.cache/emojiart` (the
    /// library's default is named after the library).
    static var defaultDirectory: URL { ImagePipeline.Configuration.cacheDirectory(named: "emojiart") }

    func pipeline() -> ImagePipeline {
        ImagePipeline(configuration: .init(
            diskDirectory: directory, fetcher: EmojiArtModel.galleryFetcher(), logger: Logger(label: "cache")
        ))
    }
}
