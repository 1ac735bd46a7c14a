import Foundation
import ImageCache
import Mustache
import Synchronization

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
    let requests = RequestTable()
    let etags = ETagTable()
    /// The details variants prefetched so far, by cache key and the original's checksum: each
    /// is prefetched once, not on every load of the catalog. Cleared with the disk.
    let prefetched = PrefetchedKeys()

    /// Prefetches the details variants of `pieces` that were not prefetched before.
    func prefetchDetails(of pieces: [Int]) {
        let requests = pieces.compactMap { request(piece: $0, processor: large) }
        let new = prefetched.keys.withLock { done in
            requests.filter { done.insert($0.cacheKey + " " + ($0.expectedSHA256 ?? "")).inserted }
        }
        if !new.isEmpty { prefetcher.startPrefetching(with: new) }
    }

    /// Forgets what was prefetched (the disk was cleared): the next catalog load prefetches again.
    func forgetPrefetches() {
        prefetched.keys.withLock { $0.removeAll() }
    }

    /// The strong ETag of an image answer: the SHA-256 of its bytes, hashed once per variant of
    /// each original (a variant is a function of its original's bytes and its processor).
    func etag(of image: Image, piece: Int, variant: String) -> String {
        let key = RequestTable.Key(piece: piece, variant: variant)
        if let source = image.originalSHA256,
           let known = etags.table.withLock({ $0[key] }), known.source == source, known.bytes == image.data.count {
            return known.etag
        }
        let etag = "\"" + SHA256Hex.digest(image.data) + "\""
        if let source = image.originalSHA256 {
            etags.table.withLock { $0[key] = (source, image.data.count, etag) }
        }
        return etag
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

    /// The request for piece `number` made by `processor`, built once per feed entry: parsing its
    /// URL on every request would cost more than the memory hit it leads to. High priority: a
    /// browser asks for it because a person is looking.
    func request(piece number: Int, processor: ThumbnailProcessor) -> ImageRequest? {
        guard let file = model.feedByPiece.value[number] else { return nil }
        let key = RequestTable.Key(piece: number, variant: processor.identifier)
        if let cached = requests.table.withLock({ $0[key] }), cached.checksum == file.checksum {
            return cached.request
        }
        var request = model.imageRequest(file, processor: processor)
        request.priority = .high
        requests.table.withLock { $0[key] = (file.checksum, request) }
        return request
    }

    /// Renders a template with the toolbar's current counters added to `context`.
    func render(_ template: String, _ context: [String: Any]) async -> String {
        var context = context
        let stats = await database.stats()
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

/// ETags by piece and variant, with the original digest and size they were computed for.
final class ETagTable: Sendable {
    let table = Mutex<[RequestTable.Key: (source: String, bytes: Int, etag: String)]>([:])
}

/// Requests by piece and variant, with the feed checksum each was made for; an entry is used
/// only while its checksum matches the feed's.
final class RequestTable: Sendable {
    struct Key: Hashable {
        let piece: Int
        let variant: String
    }

    let table = Mutex<[Key: (checksum: String, request: ImageRequest)]>([:])
}
