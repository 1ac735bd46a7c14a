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
        cacheDir.map { URL(fileURLWithPath: $0) } ?? ImageDatabase.Configuration.defaultDirectory
    }

    func database() -> ImageDatabase {
        ImageDatabase(
            configuration: .init(directory: directory, loader: .init()),
            fetcher: EmojiArtModel.galleryFetcher(),
            logger: Logger(label: "cache")
        )
    }
}
