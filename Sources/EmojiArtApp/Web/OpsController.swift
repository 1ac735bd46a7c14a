import Foundation
import Hummingbird
import ImageCache

/// `GET /health`, `GET /stats` (JSON) and `GET /metrics` (Prometheus).
struct OpsController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("health") { _, _ in
            let phase = EventsController<Context>.PhaseEvent(services.model.phase.value, progress: services.model.progress.value).name
            return Self.json("{\"status\":\"ok\",\"phase\":\"\(phase)\"}")
        }
        routes.get("stats") { _, _ in
            let stats = services.database.stats()
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return Self.json(String(decoding: try encoder.encode(stats), as: UTF8.self))
        }
        routes.get("metrics") { _, _ in
            let text = services.metrics.exposition(services.database.stats(), signatureFailures: services.model.signatureFailures.value)
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
