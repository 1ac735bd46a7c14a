import Foundation
import ImageCache
import Mustache

/// What the web app's controllers share. Immutable and `Sendable`: the state lives in the model
/// (an actor) and the database (a global actor).
struct AppServices: Sendable {
    let model: EmojiArtModel
    let database: ImageDatabase
    let templates: MustacheLibrary
    let thumbnail: ThumbnailProcessor
    let large: ThumbnailProcessor
    let metrics: AppMetrics

    /// The first feed entry for piece `number`, read without waiting for the model.
    func file(piece number: Int) -> ImageFile? {
        model.feed.value.first { $0.pieceNumber == number }
    }

    /// Renders a template with the toolbar's current counters added to `context`.
    func render(_ template: String, _ context: [String: Any]) async -> String {
        var context = context
        let stats = await database.stats()
        context["stats"] = [
            "memoryHits": stats.memoryHits, "diskHits": stats.diskHits, "originFetches": stats.originFetches,
        ]
        return templates.render(context, withTemplate: template) ?? "template \(template) is missing"
    }
}
