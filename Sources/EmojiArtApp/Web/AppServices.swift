import Foundation
import ImageCache
import Mustache
import Synchronization
import GalleryFeed

/// What the web app's controllers share. Immutable and `Sendable`: the state lives in the model
/// (an actor) and the database (a global actor).
struct AppServices: Sendable {
    let model: EmojiArtModel
    let database: ImageDatabase
    let templates: MustacheLibrary
    let thumbnail: ThumbnailProcessor
    let large: ThumbnailProcessor
    let metrics: AppMetrics
    /// Loads the details variants ahead, at low priority, once the catalog is shown.
    let prefetcher: ImagePrefetcher
    /// How browsers and proxies may cache the image answers.
    let httpCache: HTTPCacheMode
    /// The instance name the toolbar shows, if any.
    let instanceName: String?
    /// The names in `Host` the app answers to.
    let allowedHosts: AllowedHosts
    /// Each piece's variants as the image routes serve them: request, `v=`, ETag, answer.
    let variants = ServedVariants()
    /// The details variants prefetched so far, by cache key and the original's checksum: each
    /// is prefetched once, not on every load of the catalog. Cleared with the disk.
    let prefetched = PrefetchedKeys()

    /// Prefetches the details variants of `pieces` that were not prefetched before.
    func prefetchDetails(of pieces: [Int]) {
        let requests = pieces.compactMap { variant(piece: $0, route: .large)?.request }
        let new = prefetched.keys.withLock { done in
            requests.filter { done.insert($0.cacheKey + " " + ($0.expectedSHA256 ?? "")).inserted }
        }
        if !new.isEmpty { prefetcher.startPrefetching(with: new) }
    }

    /// Forgets what was prefetched (the disk was cleared): the next catalog load prefetches again.
    func forgetPrefetches() {
        prefetched.keys.withLock { $0.removeAll() }
    }

    /// The `v=` of piece `file`'s variant in ``HTTPCacheMode/immutable`` URLs: 16 hex digits of
    /// the SHA-256 of the original's checksum and the processor's identifier, so a new original
    /// or another processor gives a new URL, known before the variant is made.
    static func version(_ file: ImageFile, processor: ThumbnailProcessor) -> String {
        String(SHA256Hex.digest(Array("\(file.checksum)\n\(processor.identifier)".utf8)).prefix(16))
    }

    /// The query an image URL of `file` carries in this mode: `?v=...` when immutable.
    func query(_ file: ImageFile, processor: ThumbnailProcessor) -> String {
        httpCache == .immutable ? "?v=" + Self.version(file, processor: processor) : ""
    }

    /// The processor of `route`'s variants.
    func processor(_ route: ImageRoute) -> ThumbnailProcessor {
        route == .thumbs ? thumbnail : large
    }

    /// Piece `number`'s variant served by `route`, made once per feed entry; `nil` when the feed
    /// has no such piece.
    func variant(piece number: Int, route: ImageRoute) -> ServedVariant? {
        entry(piece: number, route: route)?.variant
    }

    /// Piece `number`'s entry for `route`: its variant, made now if the feed entry is new, with
    /// the answer prepared so far; `nil` when the feed has no such piece.
    func entry(piece number: Int, route: ImageRoute) -> ServedVariants.Entry? {
        // Every image request asks: the checksum alone is read from the feed, not its entry.
        guard let checksum = model.feedByPiece.read({ $0[number]?.checksum }) else { return nil }
        let key = ServedVariants.Key(piece: number, route: route)
        if let entry = variants.entry(key, checksum: checksum) { return entry }
        guard let file = model.feedByPiece.value[number] else { return nil }
        let processor = processor(route)
        var request = model.imageRequest(file, processor: processor)
        request.priority = .high
        let variant = ServedVariant(
            key: key, checksum: file.checksum, request: request, version: Self.version(file, processor: processor)
        )
        variants.add(variant, for: key)
        return ServedVariants.Entry(variant: variant)
    }

    /// Renders a template with the toolbar's current counters added to `context`.
    func render(_ template: String, _ context: [String: Any]) async -> String {
        var context = context
        let stats = database.stats()
        context["stats"] = [
            "memoryHits": stats.memoryHits, "diskHits": stats.diskHits, "originFetches": stats.originFetches,
            "revalidations": stats.revalidations, "refreshed": stats.refreshed, "staleAnswers": stats.staleAnswers,
        ]
        if let instanceName { context["instance"] = instanceName }
        return templates.render(context, withTemplate: template) ?? "template \(template) is missing"
    }
}

/// Details variants already prefetched, by cache key and the original's checksum.
final class PrefetchedKeys: Sendable {
    let keys = Mutex<Set<String>>([])
}

