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
/// Each stream follows the model's and the pipeline's live values; it ends when its client closes
/// the connection (`FastLaneHTTP1Channel.connectionEnd`: at once, so a client that opens and drops
/// streams in a loop holds no slot; a client gone without a word is found at the next write, and
/// each stream writes a comment line every ``AppServices/eventStreamHeartbeat``), when it has
/// lasted ``AppServices/eventStreamLifetime`` (the page opens the next), or when the server
/// shuts down gracefully. At most
/// ``AppConfiguration/maxEventStreams`` are open at once, and
/// ``AppConfiguration/maxEventStreamsPerClient`` from one client address (429 past it)
/// (``EventStreamSlots``): when every place is taken, the oldest stream of the client holding
/// the most ends for a client holding fewer, and a client holding as many as the most is
/// answered 503 with `Retry-After`. No client can hold every connection and the memory of
/// streams it never reads, nor shut a new client out. Only the app's own pages may open one: a request another site's page
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
            let slot: EventStreamSlots.Slot
            switch services.eventStreams.take(for: services.clientKey(request)) {
            case let .success(taken): slot = taken
            case .failure(.clientLimit):
                throw HTTPError(
                    .tooManyRequests, headers: [.retryAfter: "30"],
                    message: "This address holds \(services.eventStreams.perClient) event streams, the most one client may: close a page, or try again later"
                )
            case .failure(.full):
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
                    try await stream(to: &writer, until: end, evicted: slot)
                }
            )
        }
        return routes
    }

    /// Writes the events to `writer` until the server shuts down gracefully, `end` (the
    /// connection's end; `nil`: none known) completes, or `slot`'s place goes to another client.
    func stream(to writer: inout any ResponseBodyWriter, until end: EventLoopFuture<Void>?, evicted slot: EventStreamSlots.Slot) async throws {
        let (events, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(256))
        end?.whenComplete { _ in continuation.finish() }
        slot.onEviction { continuation.finish() }
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

/// The `/events` streams open at once, at most ``limit``, and by each client (its address) at
/// most ``perClient``: a slot is taken before a stream's answer begins and given back when the
/// answer is released (its stream ended, its write failed, or it was never written).
///
/// A client always finds a place while others hold theirs: when every place is taken, the oldest
/// stream of the client holding the most is ended (``Slot/onEviction(_:)``) for a client holding
/// fewer, so many addresses holding streams cannot shut a new one out (issue 48: forty loopback
/// addresses took every stream of both instances), while one holding as many as the most gets
/// 503. Such a page keeps working without its stream (its counters refresh on load); an evicted
/// page's `EventSource` asks again a second later, and finds a place only where it holds fewer
/// than the most. Thread-safe.
final class EventStreamSlots: Sendable {
    /// The most streams open at once.
    let limit: Int
    /// The most streams one client may hold.
    let perClient: Int
    /// The streams open now, live (an evicted one counts no more once it is told to end).
    let open = LiveValue(0)
    /// The slots taken so far (counted before ``open`` changes).
    let taken = Atomic<Int>(0)
    /// Streams ended to make room for a client holding fewer.
    let evicted = Atomic<Int>(0)
    private let books = Mutex(Books())

    /// Who holds which places.
    private struct Books {
        /// The next ticket: tickets are given in the order streams open.
        var next = 0
        /// Each client's tickets, oldest first.
        var byClient: [String: [Int]] = [:]
        /// How to end the stream of each ticket.
        var evictions: [Int: Eviction] = [:]
    }

    /// Why no slot was given.
    enum Refusal: Error, Equatable {
        /// This client holds ``EventStreamSlots/perClient`` streams already.
        case clientLimit
        /// Every place is taken, and no client holds more than this one.
        case full
    }

    init(limit: Int, perClient: Int = 16) {
        self.limit = max(0, limit)
        self.perClient = max(1, perClient)
    }

    /// A slot for one stream of `client`, or why not: ``Refusal/clientLimit`` when it holds
    /// ``perClient``; when ``limit`` streams are open, the oldest of the client holding the most
    /// is ended for it, if that client holds more than `client` does, else ``Refusal/full``.
    func take(for client: String) -> Result<Slot, Refusal> {
        let (outcome, victim) = books.withLock { books -> (Result<Slot, Refusal>, Eviction?) in
            let mine = books.byClient[client]?.count ?? 0
            guard mine < perClient else { return (.failure(.clientLimit), nil) }
            var victim: Eviction?
            if books.evictions.count >= limit {
                // The client holding the most, and of two holding as many, the one with the older stream.
                let holder = books.byClient.max { a, b in (a.value.count, b.value[0]) < (b.value.count, a.value[0]) }
                guard let (other, tickets) = holder, tickets.count > mine else { return (.failure(.full), nil) }
                books.byClient[other] = tickets.count == 1 ? nil : Array(tickets.dropFirst())
                victim = books.evictions.removeValue(forKey: tickets[0])
                evicted.add(1, ordering: .relaxed)
            }
            let ticket = books.next
            books.next += 1
            books.byClient[client, default: []].append(ticket)
            let eviction = Eviction()
            books.evictions[ticket] = eviction
            taken.add(1, ordering: .relaxed)
            open.update { $0 = books.evictions.count }
            return (.success(Slot(self, ticket: ticket, client: client, eviction: eviction)), victim)
        }
        victim?.evict()
        return outcome
    }

    /// Gives back the place of `ticket`, unless it was given to another already (evicted).
    fileprivate func release(_ ticket: Int, of client: String) {
        books.withLock { books in
            guard books.evictions.removeValue(forKey: ticket) != nil else { return }
            books.byClient[client]?.removeAll { $0 == ticket }
            if books.byClient[client]?.isEmpty == true { books.byClient[client] = nil }
            open.update { $0 = books.evictions.count }
        }
    }

    /// One stream's place: given back when released.
    final class Slot: Sendable {
        private let slots: EventStreamSlots
        private let ticket: Int
        private let client: String
        private let eviction: Eviction

        fileprivate init(_ slots: EventStreamSlots, ticket: Int, client: String, eviction: Eviction) {
            (self.slots, self.ticket, self.client, self.eviction) = (slots, ticket, client, eviction)
        }

        /// Runs `action` when the place is given to a client holding fewer streams (at once if it
        /// was already): the stream must end.
        func onEviction(_ action: @escaping @Sendable () -> Void) {
            eviction.onEviction(action)
        }

        deinit { slots.release(ticket, of: client) }
    }

    /// The end of one stream, asked for by ``take(for:)`` before or after the stream set it up.
    fileprivate final class Eviction: Sendable {
        private let state = Mutex<(evicted: Bool, action: (@Sendable () -> Void)?)>((false, nil))

        func evict() {
            let action = state.withLock { state in
                state.evicted = true
                defer { state.action = nil }
                return state.action
            }
            action?()
        }

        func onEviction(_ action: @escaping @Sendable () -> Void) {
            let already = state.withLock { state in
                if !state.evicted { state.action = action }
                return state.evicted
            }
            if already { action() }
        }
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
