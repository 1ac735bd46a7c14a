#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import NIOCore
import Synchronization

/// What one server allows a client's connection: the time to send a whole request, the time an
/// answer may wait for a client that takes none of its bytes, and how many connections may be
/// open at once. A client that trickles a request (slowloris), stops reading, or opens more
/// connections than the process has file descriptors cannot hold the server (attacker round 6,
/// finding 4).
public struct ConnectionLimits: Sendable, Equatable {
    /// The time from a request's first byte to its last, head and body; `nil` never. Past it the
    /// connection is closed: bytes arriving slowly do not lengthen it.
    public var requestTimeout: TimeAmount?
    /// The longest an answer may wait with bytes to send and none taken by the client (its
    /// socket not writable); `nil` never. Past it the connection is closed, an event stream's too.
    public var sendTimeout: TimeAmount?
    /// The most connections open at once; one more is closed as soon as it is accepted, and
    /// counted (``ConnectionGuard/Cut/overLimit``).
    public var maxConnections: Int

    /// The descriptors a process keeps for what is not a client's connection: the disk cache's
    /// files, the origin's connections, logs, libvips.
    public static let reservedDescriptors = 128

    /// Limits of `timeout` for a request and for an answer's progress (30 s by default), and
    /// `maxConnections` (by default ``defaultMaxConnections(servers:)`` for one server).
    public init(requestTimeout: TimeAmount? = .seconds(30), sendTimeout: TimeAmount? = .seconds(30), maxConnections: Int? = nil) {
        self.requestTimeout = requestTimeout
        self.sendTimeout = sendTimeout
        self.maxConnections = maxConnections ?? Self.defaultMaxConnections(servers: 1)
    }

    /// The process's limit on open descriptors (`RLIMIT_NOFILE`'s soft limit) less
    /// ``reservedDescriptors``, shared by the `servers` the process runs, and at least 16: a
    /// connection past it is closed by the server before `accept` fails for want of a descriptor
    /// and everything else the process opens with it.
    public static func defaultMaxConnections(servers: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        // RLIM_INFINITY and other huge values: a bound that fits an Int and any real table.
        let descriptors = Int(clamping: min(limit.rlim_cur, 1 << 20))
        return max(16, (descriptors - reservedDescriptors) / max(1, servers))
    }
}

/// The connections of one server: admits each accepted one within
/// ``ConnectionLimits/maxConnections`` and counts every connection cut (``Cut``), for the
/// server's metrics. Thread-safe: every event loop of the server shares it.
public final class ConnectionGuard: Sendable {
    /// Why a connection was cut.
    public enum Cut: String, Sendable, CaseIterable {
        /// Accepted while ``ConnectionLimits/maxConnections`` were open: closed at once.
        case overLimit = "over_limit"
        /// A request not received whole within ``ConnectionLimits/requestTimeout``.
        case requestTimeout = "request_timeout"
        /// An answer's bytes not taken within ``ConnectionLimits/sendTimeout``.
        case sendTimeout = "send_timeout"
        /// A request with a body: no route of these servers takes one (answered 413).
        case body = "request_body"
    }

    /// The limits.
    public let limits: ConnectionLimits
    private let open = Atomic<Int>(0)
    private let counts = Mutex<[Cut: Int]>([:])
    private let counted: @Sendable (Cut) -> Void

    /// Creates a guard for `limits`; `counted` is told of every connection cut (a metric).
    public init(_ limits: ConnectionLimits = ConnectionLimits(), counted: @escaping @Sendable (Cut) -> Void = { _ in }) {
        self.limits = limits
        self.counted = counted
    }

    /// The connections open now.
    public var openConnections: Int { open.load(ordering: .relaxed) }

    /// Connections cut for `reason` so far.
    public func count(_ reason: Cut) -> Int {
        counts.withLock { $0[reason, default: 0] }
    }

    func cut(_ reason: Cut) {
        counts.withLock { $0[reason, default: 0] += 1 }
        counted(reason)
    }

    /// Whether `channel`, just accepted, may stay open: counted open until it closes if so, and
    /// counted cut if not (the caller closes it).
    func admit(_ channel: any Channel) -> Bool {
        guard open.add(1, ordering: .relaxed).newValue <= limits.maxConnections else {
            open.subtract(1, ordering: .relaxed)
            cut(.overLimit)
            return false
        }
        channel.closeFuture.whenComplete { _ in self.open.subtract(1, ordering: .relaxed) }
        return true
    }
}
