import FastLane
import Foundation
import HTTPTypes
import Hummingbird
import ImageCache
import NIOCore
import ServiceLifecycle
import Synchronization

/// `GET /events`: server-sent events for the pages: `progress` while verifying, `phase` when it
/// changes, and `stats` (``AppStats``) at once, then after a memory hit, disk hit or origin
/// fetch, or a move of the count of variants left to make in the background: at most ten a
/// second, made once for every stream (``StatsBroadcast``).
///
/// Each stream follows the model's and the database's live values; it ends when its client closes
/// the connection (`FastLaneHTTP1Channel.connectionEnd`: at once, so a client that opens and drops
/// streams in a loop holds no slot; a client gone without a word is found at the next write, and
/// each stream writes a comment line every ``AppServices/eventStreamHeartbeat``), when it has
/// lasted ``AppServices/eventStreamLifetime`` (the page opens the next), or when the server
/// shuts down gracefully. At most
/// ``AppConfiguration/maxEventStreams`` are open at once (``EventStreamSlots``); one more is
/// answered 503 with `Retry-After`: no client can hold every connection and the memory of
/// streams it never reads. Only the app's own pages may open one: a request another site's page
/// sent (``BrowserGuardMiddleware/crossSiteReason(_:)``) is refused with 403 before it takes a
/// slot, so no page a visitor opens can take the streams of the app's own pages.
struct EventsController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("events") { request, _ in
            if let reason = BrowserGuardMiddleware<Context>.crossSiteReason(request) {
                services.metrics.refused(.crossSite)
                throw HTTPError(.forbidden, message: "Only the app's own pages follow its events, and \(reason).")
            }
            guard let slot = services.eventStreams.take() else {
                throw HTTPError(
                    .serviceUnavailable, headers: [.retryAfter: "30"],
                    message: "\(services.eventStreams.limit) event streams are open, the most this app serves at once: close a page, or try again later"
                )
            }
            let end = FastLaneHTTP1Channel.connectionEnd
            return Response(
                status: .ok,
                // Never buffered by a proxy in front (nginx honours X-Accel-Buffering).
                headers: [.contentType: "text/event-stream", .cacheControl: "no-store", HTTPField.Name("X-Accel-Buffering")!: "no"],
                // The slot goes back when the answer does: written, failed, or never begun.
                body: ResponseBody { writer in
                    defer { withExtendedLifetime(slot) {} }
                    try await stream(to: &writer, until: end)
                }
            )
        }
        return routes
    }

    /// Writes the events to `writer` until the server shuts down gracefully or `end` (the
    /// connection's end; `nil`: none known) completes.
    func stream(to writer: inout any ResponseBodyWriter, until end: EventLoopFuture<Void>?) async throws {
        let (events, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(256))
        end?.whenComplete { _ in continuation.finish() }
        let (model, broadcast) = (services.model, services.statsBroadcast)
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await progress in model.progress.stream() {
                        continuation.yield(ServerSentEvent.message("progress", progress))
                    }
                }
                group.addTask {
                    for await phase in model.phase.stream() {
                        continuation.yield(ServerSentEvent.message("phase", PhaseEvent(phase, progress: model.progress.value)))
                    }
                }
                group.addTask {
                    // The counts read now, then every change, read for all streams at once, at
                    // most ten times a second.
                    for await event in await broadcast.events() {
                        continuation.yield(event)
                    }
                }
                group.addTask { [lifetime = services.eventStreamLifetime] in
                    // The stream's end of life: its page's EventSource opens the next.
                    if (try? await Task.sleep(for: lifetime)) != nil { continuation.finish() }
                }
                group.addTask { [heartbeat = services.eventStreamHeartbeat] in
                    // A comment line, which pages ignore: the write that finds a client gone.
                    while (try? await Task.sleep(for: heartbeat)) != nil {
                        continuation.yield(": still here\n\n")
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

/// The `/events` streams open at once, at most ``limit``: a slot is taken before a stream's
/// answer begins and given back when the answer is released (its stream ended, its write failed,
/// or it was never written).
final class EventStreamSlots: Sendable {
    /// The most streams open at once.
    let limit: Int
    /// The streams open now, live.
    let open = LiveValue(0)
    /// The slots taken so far (counted before ``open`` changes).
    let taken = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// A slot for one stream, or `nil` when ``limit`` streams are open.
    func take() -> Slot? {
        var taken = false
        open.update { count in
            guard count < limit else { return }
            count += 1
            taken = true
            self.taken.add(1, ordering: .relaxed)
        }
        return taken ? Slot(self) : nil
    }

    /// One stream's place: given back when released.
    final class Slot: Sendable {
        private let slots: EventStreamSlots
        fileprivate init(_ slots: EventStreamSlots) { self.slots = slots }
        deinit { slots.open.update { $0 -= 1 } }
    }
}

/// One server-sent event as the pages read it: `event: NAME` and the value as one line of JSON.
enum ServerSentEvent {
    /// The keys sorted, so the same value is always the same text (the broadcast compares them).
    static func message(_ name: String, _ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "event: \(name)\ndata: \(json)\n\n"
    }
}
