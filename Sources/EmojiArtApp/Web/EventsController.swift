import Foundation
import HTTPTypes
import Hummingbird
import ImageCache
import ServiceLifecycle

/// `GET /events`: server-sent events for the pages: `progress` while verifying, `phase` when it
/// changes, and `stats` (``AppStats``) at once, whenever a memory hit, disk hit or origin fetch
/// happens, and whenever the count of variants left to make in the background moves.
///
/// Each stream follows the model's and the database's live values; it ends when the client
/// goes away or the server shuts down gracefully.
struct EventsController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("events") { _, _ in
            Response(
                status: .ok,
                // Never buffered by a proxy in front (nginx honours X-Accel-Buffering).
                headers: [.contentType: "text/event-stream", .cacheControl: "no-store", HTTPField.Name("X-Accel-Buffering")!: "no"],
                body: ResponseBody { writer in try await stream(to: &writer) }
            )
        }
        return routes
    }

    func stream(to writer: inout any ResponseBodyWriter) async throws {
        let (events, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(256))
        let (model, database, services) = (services.model, services.database, services)
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await progress in model.progress.stream() {
                        continuation.yield(Self.event("progress", progress))
                    }
                }
                group.addTask {
                    for await phase in model.phase.stream() {
                        continuation.yield(Self.event("phase", PhaseEvent(phase, progress: model.progress.value)))
                    }
                }
                for counter in [database.onMemoryAccess, database.onDiskAccess, database.onOriginFetch] {
                    group.addTask {
                        for await _ in counter {
                            continuation.yield(Self.event("stats", services.stats()))
                        }
                    }
                }
                group.addTask {
                    // Starts with the counts now, then each time a variant is listed for the
                    // background or leaves it.
                    for await _ in services.backgroundEncoder.changes.stream() {
                        continuation.yield(Self.event("stats", services.stats()))
                    }
                }
                try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
                for await event in events {
                    try await writer.write(ByteBuffer(string: event))
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            continuation.finish()
        }
        try await writer.finish(nil)
    }

    /// One SSE message: `event: NAME` and the value as one line of JSON.
    static func event(_ name: String, _ value: some Encodable) -> String {
        let json = (try? JSONEncoder().encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "event: \(name)\ndata: \(json)\n\n"
    }

    /// A phase change, with the progress at that moment: the page draws the final count from it
    /// before it reloads, whichever of the two streams' events reaches it first.
    struct PhaseEvent: Encodable {
        let name: String
        let text: String
        let progress: VerificationProgress

        init(_ phase: EmojiArtModel.Phase, progress: VerificationProgress) {
            self.progress = progress
            switch phase {
            case .idle: name = "idle"
            case .loadingFeed: name = "loadingFeed"
            case .verifying: name = "verifying"
            case .ready: name = "ready"
            case .failed: name = "failed"
            }
            text = PageController<BasicRequestContext>.text(of: phase)
        }
    }
}
