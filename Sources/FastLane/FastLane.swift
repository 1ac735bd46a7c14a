import Atomics
public import Foundation
import HTTPCaching
public import HTTPTypes
public import NIOCore
import NIOHTTP1
import Synchronization

/// Answers requests for images that are already in memory on the event loop that read them,
/// with no task and no hop to Swift's concurrency threads; every other request goes on to
/// Hummingbird untouched.
///
/// A server gives the lane a ``Responder``: a synchronous function that either answers a request
/// completely (a memory hit) or returns `nil` (a miss, another route, anything it does not fully
/// understand), in which case the request is passed on. The lane itself passes on, without asking
/// the responder, every request other than an HTTP/1.1 `GET` or `HEAD` of a path, every request
/// whose path is not in its route's one spelling (``hasOneSpelling(_:)``: the router's 404), every request
/// that has a body, an `Expect` or a `Connection` field, every request while an earlier one on
/// the same connection is still being answered by Hummingbird (HTTP/1.1 pipelining keeps its
/// order), every request while the connection cannot take more output (Hummingbird's
/// back-pressure then applies), and everything after a passed-on request that asked to close the
/// connection.
///
/// Answers get what Hummingbird's `Application` adds to every answer: `Content-Length` when the
/// responder did not set one, `Date` and `Server`; `HEAD` gets the `GET` answer's head without
/// its body. Install it with ``FastLaneHTTP1Channel`` (or `HTTPServerBuilder.http1(fastLane:)`).
public struct FastLane: Sendable {
    /// A synchronous answer from memory, or `nil` to pass the request on. Runs on an event loop:
    /// it must not block or wait. A request passed on reaches its route as any other: the route
    /// works out what it needs itself (microseconds, on a path of milliseconds).
    public typealias Responder = @Sendable (Request) -> Answer?

    /// What a responder sees of a request: an HTTP/1.1 `GET` or `HEAD` of an origin-form target
    /// (a path and maybe a query) without a body.
    public struct Request {
        let head: HTTPRequestHead

        init(_ head: HTTPRequestHead) {
            self.head = head
        }

        /// The request target as sent: the path and the query, if any (`/thumbs/5?v=...`).
        public var target: String { head.uri }
        /// Whether it is a `HEAD` (the lane sends the answer's head only).
        public var isHead: Bool { head.method == .HEAD }

        /// The first value of the field `name` as sent, or `nil` when it was not sent: no copy
        /// is made (the lane's checks of a field, such as `Host`, allocate nothing).
        public func firstValue(of name: String) -> String? {
            head.headers.first(name: name)
        }

        /// The values of the field `name`, combined with ", " as HTTP allows for a list, or `nil`
        /// when it was not sent (HTTP types' combined value, which the routes read).
        public func field(_ name: String) -> String? {
            let values = head.headers[name]
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }
    }

    /// A complete answer.
    public struct Answer: Sendable {
        /// The status and the header fields, with their encoding kept by the lane.
        public let head: Head
        /// The body (not sent for `HEAD`).
        public var body: ByteBuffer

        /// The status.
        public var status: HTTPResponse.Status { head.status }
        /// The header fields; `Content-Length` is added when missing, `Date` and `Server` always.
        public var headerFields: HTTPFields { head.headerFields }

        /// Creates an answer with a head of its own, encoded for it alone.
        public init(status: HTTPResponse.Status, headerFields: HTTPFields, body: ByteBuffer = ByteBuffer()) {
            self.init(head: Head(status: status, headerFields: headerFields), body: body)
        }

        /// Creates an answer with a head made once and shared: what the lane sends fastest.
        public init(head: Head, body: ByteBuffer = ByteBuffer()) {
            self.head = head
            self.body = body
        }
    }

    /// The function that answers from memory: the responder, for a target in its one spelling
    /// (``hasOneSpelling(_:)``); `nil` for any other.
    public let respond: Responder
    /// The `Server` field of every answer, as the application's `serverName`.
    public let serverName: String?
    let date: DateField
    let answers = Tally()

    /// Creates a lane.
    /// - Parameters:
    ///   - serverName: the `Server` field, the same as the application's.
    ///   - now: the clock the `Date` field is read from (the system clock by default).
    ///   - respond: answers a request from memory or returns `nil`. It is asked only about a
    ///     target in its route's one spelling (``hasOneSpelling(_:)``); any other is passed on, to
    ///     the router's 404.
    public init(serverName: String?, now: @escaping @Sendable () -> Date = { Date() }, respond: @escaping Responder) {
        self.serverName = serverName
        self.respond = { request in Self.hasOneSpelling(request.target) ? respond(request) : nil }
        date = DateField(now: now)
    }

    /// Requests the lane has answered so far, on every connection; the rest went to Hummingbird.
    public var answered: Int { answers.count.load(ordering: .relaxed) }
}

/// A count shared by every connection of a lane.
final class Tally: Sendable {
    let count = Atomic<Int>(0)
}

/// The `Date` field, formatted once per second of the clock it reads. Read on every event loop
/// for every answer the lane sends, without a lock: the current second's text is one immutable
/// object behind an atomic reference (as Hummingbird keeps its own date), which a reader loads,
/// and replaces when it finds it a second old.
final class DateField: Sendable {
    /// One second's field value.
    final class Text: AtomicReference, Sendable {
        /// The second since 1970 it is the value of.
        let second: Int
        /// The IMF-fixdate.
        let value: String

        init(second: Int, value: String) {
            self.second = second
            self.value = value
        }
    }

    private let now: @Sendable () -> Date
    /// `.min`, which no reading of the clock gives, until the first answer.
    private let current = ManagedAtomic(Text(second: .min, value: ""))

    init(now: @escaping @Sendable () -> Date) {
        self.now = now
    }

    var value: String {
        let date = now()
        // Int(exactly:) of a clock's reading: a clock set past Int's range formats every time, never traps.
        guard let second = Int(exactly: date.timeIntervalSince1970.rounded(.down)), second != .min else { return HTTPDate.format(date) }
        let text = current.load(ordering: .acquiring)
        if text.second == second { return text.value }
        // Loops that find the same new second at once each format it; the last one stored stays.
        let fresh = Text(second: second, value: HTTPDate.format(date))
        current.store(fresh, ordering: .releasing)
        return fresh.value
    }
}
