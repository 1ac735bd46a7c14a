import ArgumentParser
import EmojiArtApp
import Foundation
import ImageCache
import Synchronization

/// `emojiart sync`: the app's work in a terminal.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Load the feed, verify every image, fetch every thumbnail, print a summary.",
        discussion: "Shows a live progress bar on a terminal and plain lines otherwise. The feed is authenticated first (its signature, with the gallery's pinned or trusted key, over this request's nonce and the gallery's origin, --gallery-origin); a feed that fails is not used, and the summary says when the feed was last authenticated (past its signature's life, that its prices are stale). On a warm cache, fresh images cost no request, stale ones one conditional request (304 when unchanged) and changed ones one download; the summary counts each request by its answer (downloaded, not modified, not found, error answers, no answer; they add up to origin fetches). The gallery's 404s for its missing pieces are remembered with their lifetime, so offline and while the gallery is down those pieces are listed as missing, not failed. With --offline nothing is sent: what the cache does not hold is listed as not cached. Exit status 0 when every image the gallery has verifies; 1 on any mismatch, failure or image not cached offline, or a feed that cannot be authenticated (the gallery's missing pieces 0, 10 and 20 do not count). When the gallery's answer cannot be authenticated but a feed was stored, the stored catalog is verified and the summary says it could not be re-authenticated and when it last was; the exit status is 1 then too. A stored feed is used only as the bytes this machine authenticated (its SHA-256 is kept in the trust file): one changed on disk is removed and fetched again, and offline or with the gallery down sync exits 1 saying so."
    )

    @OptionGroup var client: GalleryClientOptions
    @OptionGroup var cache: CacheOptions

    @Flag(help: "Also make every verified piece's thumbnail in every format this machine can write (AVIF, WebP, PNG) at 1x and 2x, as `emojiart app` warms them, so the app's first visitors get them from the cache.")
    var variants = false

    func run() async throws {
        let pipeline = cache.pipeline()
        await pipeline.setUp()
        let model = EmojiArtModel(
            galleryURL: client.galleryURL, pipeline: pipeline, concurrency: client.concurrency, trust: client.trust,
            offline: client.offline, galleryOrigin: client.expectedOrigin
        )
        let tty = isatty(STDOUT_FILENO) == 1
        let lastDecile = LockedCounter()
        let report: Sync.Report
        do {
            report = try await Sync(model: model, variants: variants).run { progress in
                guard progress.total > 0 else { return }
                if tty {
                    FileHandle.standardOutput.write(Data(("\r" + TerminalText.bar(progress)).utf8))
                } else if lastDecile.advance(to: progress.completed * 10 / progress.total) {
                    // Each tenth once; the whole (the tenth tenth) once, however often it is told.
                    print("verified \(progress.completed)/\(progress.total)")
                }
            }
        } catch {
            throw CommandFailure("\(error)")
        }
        if tty { print("") }
        print(TerminalText.summary(report))
        if !report.succeeded { throw ExitCode(1) }
        // The catalog was not confirmed by the gallery: its images may verify against an old feed.
        if report.feedOrigin?.isNotReauthenticated == true { throw ExitCode(1) }
    }
}

