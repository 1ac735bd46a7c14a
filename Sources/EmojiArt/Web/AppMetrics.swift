import ImageCache
import Prometheus
import Synchronization

/// `GET /metrics` for the app: the database's counters in Prometheus text format.
///
/// The counters are read from ``ImageDatabase/stats()`` at each scrape; Prometheus counters only
/// go up, so each scrape adds what happened since the last one. Thread-safe.
final class AppMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let last = Mutex(ImageDatabase.Stats?.none)
    private let hits: [String: Counter]
    private let originFetches: Counter
    private let failures: Counter
    private let corruptEntries: Counter
    private let diskFailures: Counter
    private let diskEntries: Gauge
    private let diskBytes: Gauge
    private let memoryEntries: Gauge
    private let memoryBytes: Gauge

    init() {
        hits = [
            "memory": registry.makeCounter(name: "emojiart_cache_hits_total", labels: [("tier", "memory")], help: "Lookups answered by a cache tier"),
            "disk": registry.makeCounter(name: "emojiart_cache_hits_total", labels: [("tier", "disk")], help: "Lookups answered by a cache tier"),
            "coalesced": registry.makeCounter(name: "emojiart_cache_hits_total", labels: [("tier", "in_flight")], help: "Lookups answered by a cache tier"),
        ]
        originFetches = registry.makeCounter(name: "emojiart_origin_fetches_total", help: "Requests sent to the gallery")
        failures = registry.makeCounter(name: "emojiart_load_failures_total", help: "Image loads that failed")
        corruptEntries = registry.makeCounter(name: "emojiart_disk_corrupt_entries_total", help: "Disk entries that failed their integrity check")
        diskFailures = registry.makeCounter(name: "emojiart_disk_failures_total", help: "Disk operations that failed")
        diskEntries = registry.makeGauge(name: "emojiart_disk_entries", help: "Entries in the disk cache")
        diskBytes = registry.makeGauge(name: "emojiart_disk_bytes", help: "Bytes in the disk cache")
        memoryEntries = registry.makeGauge(name: "emojiart_memory_entries", help: "Images in the memory cache")
        memoryBytes = registry.makeGauge(name: "emojiart_memory_bytes", help: "Bytes in the memory cache")
    }

    /// The exposition after bringing the counters up to `stats`.
    func exposition(_ stats: ImageDatabase.Stats) -> [UInt8] {
        last.withLock { last in
            let before = last
            func add(_ counter: Counter, _ path: KeyPath<ImageDatabase.Stats, Int>) {
                let delta = stats[keyPath: path] - (before?[keyPath: path] ?? 0)
                if delta > 0 { counter.increment(by: Int64(delta)) }
            }
            add(hits["memory"]!, \.memoryHits)
            add(hits["disk"]!, \.diskHits)
            add(hits["coalesced"]!, \.coalesced)
            add(originFetches, \.originFetches)
            add(failures, \.failures)
            add(corruptEntries, \.corruptEntries)
            add(diskFailures, \.diskFailures)
            last = stats
        }
        diskEntries.set(Int64(stats.diskEntries))
        diskBytes.set(Int64(stats.diskBytes))
        memoryEntries.set(Int64(stats.memoryEntries))
        memoryBytes.set(Int64(stats.memoryBytes))
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return bytes
    }
}
