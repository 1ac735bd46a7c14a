import CoreMetrics
public import ImageCache
import Metrics
import NIOCore
public import Prometheus
import Synchronization

/// The image service's counters in Prometheus text format: requests by status and their time,
/// processing time, and, read from its pipeline at each scrape, source fetches and cache hits.
///
/// Each service owns its registry (the global `MetricsSystem` is not bootstrapped), so several in
/// one process, as in tests, count apart. Thread-safe.
public final class ImageServiceMetrics: Sendable {
    /// The registry the counters live in.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let requests = Mutex<[Int: CoreMetrics.Counter]>([:])
    private let ok: CoreMetrics.Counter
    private let notModified: CoreMetrics.Counter
    private let requestTime: CoreMetrics.Timer
    private let processingTime: CoreMetrics.Timer
    private let sourceFetches: Prometheus.Counter
    private let memoryHits: Prometheus.Counter
    private let diskHits: Prometheus.Counter
    private let last = Mutex(ImagePipeline.Stats?.none)

    /// Counters in a registry of their own.
    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(5), .milliseconds(25), .milliseconds(100),
            .milliseconds(250), .seconds(1), .seconds(2.5), .seconds(10),
        ]
        self.factory = factory
        ok = CoreMetrics.Counter(label: "emojiart_image_service_requests_total", dimensions: [("status", "200")], factory: factory)
        notModified = CoreMetrics.Counter(label: "emojiart_image_service_requests_total", dimensions: [("status", "304")], factory: factory)
        requestTime = Timer(label: "emojiart_image_service_request_duration_seconds", preferredDisplayUnit: .seconds, factory: factory)
        processingTime = Timer(label: "emojiart_image_service_processing_duration_seconds", preferredDisplayUnit: .seconds, factory: factory)
        sourceFetches = registry.makeCounter(name: "emojiart_image_service_source_fetches_total", help: "Requests sent to sources, conditional ones included")
        memoryHits = registry.makeCounter(name: "emojiart_image_service_cache_hits_total", labels: [("tier", "memory")], help: "Answers from the service's caches")
        diskHits = registry.makeCounter(name: "emojiart_image_service_cache_hits_total", labels: [("tier", "disk")], help: "Answers from the service's caches")
    }

    /// Counts one answer by status, and its time.
    func answered(_ status: Int, after duration: Duration) {
        requestTime.recordNanoseconds(Self.nanoseconds(duration))
        // A memory hit's counters are made once: the fast lane counts every answer it sends.
        switch status {
        case 200: return ok.increment()
        case 304: return notModified.increment()
        default: break
        }
        let counter = requests.withLock { counters in
            if let counter = counters[status] { return counter }
            let counter = CoreMetrics.Counter(label: "emojiart_image_service_requests_total", dimensions: [("status", "\(status)")], factory: factory)
            counters[status] = counter
            return counter
        }
        counter.increment()
    }

    /// Records the time one variant took to make (decode, process, encode).
    func processed(after duration: Duration) {
        processingTime.recordNanoseconds(Self.nanoseconds(duration))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }

    /// The Prometheus text exposition, with the pipeline's `stats` read now: counters only go up,
    /// so each scrape adds what happened since the last.
    public func exposition(_ stats: ImagePipeline.Stats) -> String {
        last.withLock { last in
            let before = last
            sourceFetches.increment(by: Int64(max(0, stats.originFetches - (before?.originFetches ?? 0))))
            memoryHits.increment(by: Int64(max(0, stats.memoryHits - (before?.memoryHits ?? 0))))
            diskHits.increment(by: Int64(max(0, stats.diskHits - (before?.diskHits ?? 0))))
            last = stats
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
