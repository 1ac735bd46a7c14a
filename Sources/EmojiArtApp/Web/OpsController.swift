import Foundation
import Hummingbird
import ImageCache
import ImageService

/// `GET /health`, `GET /stats` (JSON: ``AppStats``) and `GET /metrics` (Prometheus).
struct OpsController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("health") { _, _ in
            let phase = EventsController<Context>.PhaseEvent(services.model.phase.value, progress: services.model.progress.value).name
            return Self.json("{\"status\":\"ok\",\"phase\":\"\(phase)\"}")
        }
        routes.get("stats") { _, _ in
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return Self.json(String(decoding: try encoder.encode(await services.stats()), as: UTF8.self))
        }
        routes.get("metrics") { _, _ in
            var text = services.metrics.exposition(await services.pipeline.stats(), signatureFailures: services.model.signatureFailures.value)
            if let imageService = services.imageService {
                text += Array(imageService.metrics.exposition(await imageService.pipeline.stats()).utf8)
            }
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: text))
            )
        }
        return routes
    }

    static func json(_ text: String) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: text))
        )
    }
}

/// What `GET /stats` and the event stream's `stats` events carry: the pipeline's counts
/// (``ImageDatabase/stats()``, its fields at the top level), `backgroundEncodes`, the variants
/// being made in the background or waiting to be (a stand-in's better format, see
/// ``ServedFormat/isQuickToEncode``, and the warm-up's), and `warmUp`, the warm-up's progress
/// (``WarmUp/Progress``: `state`, `made`, `failed`, `refused`, `total`, `bytes`, `budget`, `pixels`, `pixelBudget`, `seconds`, `runs`).
///
/// A client that was answered with a stand-in can follow `/events`, opened after that answer,
/// until `backgroundEncodes` is 0: its better format was then made, or its making failed (the
/// encode was listed before the stand-in was sent).
struct AppStats: Encodable {
    let pipeline: ImagePipeline.Stats
    let backgroundEncodes: Int
    let warmUp: WarmUp.Progress

    private enum Key: String, CodingKey {
        case backgroundEncodes, warmUp
    }

    /// The counts now: `pipeline`'s, the variants `encoder` and `warmer` have to make, and the
    /// warm-up's progress.
    @ImageDatabase static func now(
        pipeline: ImagePipeline, encoder: ImagePrefetcher, warmer: ImagePrefetcher, warmUp: LiveValue<WarmUp.Progress>
    ) -> AppStats {
        AppStats(pipeline: pipeline.stats(), backgroundEncodes: encoder.count + warmer.count, warmUp: warmUp.value)
    }

    func encode(to encoder: any Encoder) throws {
        try pipeline.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(backgroundEncodes, forKey: .backgroundEncodes)
        try container.encode(warmUp, forKey: .warmUp)
    }
}

extension AppServices {
    /// The counts `/stats` and the `stats` events show.
    @ImageDatabase func stats() -> AppStats {
        AppStats.now(pipeline: pipeline, encoder: encoder, warmer: warmer, warmUp: warmUp)
    }
}
