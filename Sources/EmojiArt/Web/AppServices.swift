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
    let requests = RequestTable()

    /// The request for piece `number` made by `processor`, built once per feed entry: parsing its
    /// URL on every request would cost more than the memory hit it leads to. High priority: a
    /// browser asks for it because a person is looking.
    func request(piece number: Int, processor: ThumbnailProcessor) -> ImageRequest? {
        guard let file = model.feedByPiece.value[number] else { return nil }
        let key = RequestTable.Key(piece: number, variant: processor.identifier)
        if let cached = requests.table.withLock({ $0[key] }), cached.expectedSHA256.map({ "sha256:" + $0 }) == file.checksum {
            return cached
        }
        var request = model.imageRequest(file, processor: processor)
        request.priority = .high
        requests.table.withLock { $0[key] = request }
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
        return templates.render(context, withTemplate: template) ?? "template \(template) is missing"
    }
}

/// Requests by piece and variant; an entry is used only while its checksum matches the feed's.
final class RequestTable: Sendable {
    struct Key: Hashable {
        let piece: Int
        let variant: String
    }

    let table = Mutex<[Key: ImageRequest]>([:])
}
