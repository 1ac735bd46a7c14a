import CoreMetrics
import FastLane
import Metrics
public import NIOCore
public import Prometheus
import Synchronization

/// The gallery's counters, exported in Prometheus text format at `GET /metrics`.
///
/// Each gallery owns its registry (the global `MetricsSystem` is not bootstrapped), so several
/// galleries in one process, as in tests, count separately. Thread-safe.
public final class GalleryMetrics: Sendable {
    /// The registry the counters live in.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    // Counter handles are made once and reused: making one per request costs a registry lookup.
    private let pieceCounters: [CoreMetrics.Counter]
    private let invalidPieceCounter: CoreMetrics.Counter
    private let bytesCounter: CoreMetrics.Counter
    private let requestCounters = Mutex<[String: CoreMetrics.Counter]>([:])
    private let imageOK: CoreMetrics.Counter
    private let imageNotModified: CoreMetrics.Counter
    private let cutConnections: [ConnectionGuard.Cut: CoreMetrics.Counter]

    /// Creates counters in a new registry, one per piece of `catalog`.
    public init(catalog: ArtCatalog = .book) {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(100), .milliseconds(1), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
        ]
        self.factory = factory
        pieceCounters = (0..<catalog.count).map {
            Counter(label: "gallery_image_requests_total", dimensions: [("piece", "\($0)")], factory: factory)
        }
        invalidPieceCounter = Counter(label: "gallery_image_requests_total", dimensions: [("piece", "invalid")], factory: factory)
        bytesCounter = Counter(label: "gallery_bytes_served_total", factory: factory)
        func imageCounter(_ status: Int) -> CoreMetrics.Counter {
            Counter(label: "gallery_http_requests_total", dimensions: [("route", "/gallery/image"), ("status", "\(status)")], factory: factory)
        }
        imageOK = imageCounter(200)
        imageNotModified = imageCounter(304)
        var cut: [ConnectionGuard.Cut: CoreMetrics.Counter] = [:]
        for reason in ConnectionGuard.Cut.allCases {
            cut[reason] = Counter(label: "gallery_connections_cut_total", dimensions: [("reason", reason.rawValue)], factory: factory)
        }
        cutConnections = cut
        requestCounters.withLock { $0 = ["/gallery/image 200": imageOK, "/gallery/image 304": imageNotModified] }
    }

    /// Counts one answered request by route (a fixed set, never the raw path) and status.
    func request(route: String, status: Int) {
        let key = "\(route) \(status)"
        let counter = requestCounters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(
                label: "gallery_http_requests_total", dimensions: [("route", route), ("status", "\(status)")], factory: factory
            )
            counters[key] = counter
            return counter
        }
        counter.increment()
    }

    /// Counts one answer of `/gallery/image`, as ``request(route:status:)`` would, with the
    /// counters of 200 and 304 made once: the fast lane counts every answer it sends.
    func imageAnswer(status: Int) {
        switch status {
        case 200: imageOK.increment()
        case 304: imageNotModified.increment()
        default: request(route: "/gallery/image", status: status)
        }
    }

    /// Counts a connection the server cut for `reason` (past `--max-connections`, a deadline, a body).
    func connectionCut(_ reason: ConnectionGuard.Cut) {
        cutConnections[reason]?.increment()
    }

    /// Counts one request for piece `N`.
    func imageRequest(piece: Int) {
        (pieceCounters.indices.contains(piece) ? pieceCounters[piece] : invalidPieceCounter).increment()
    }

    /// Adds `bytes` to the body bytes served.
    func served(bytes: Int) {
        bytesCounter.increment(by: bytes)
    }

    /// Records how long rendering one piece took.
    func rendered(in duration: Duration) {
        Timer(label: "gallery_render_duration_seconds", factory: factory).recordInterval(duration)
    }

    /// The Prometheus text exposition of every counter.
    public func exposition() -> ByteBuffer {
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return ByteBuffer(bytes: bytes)
    }
}

extension Timer {
    /// Records a `Duration` in nanoseconds.
    func recordInterval(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
