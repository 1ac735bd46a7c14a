import FastLane
import ImageCache
import Prometheus
import Synchronization

/// `GET /metrics` for the app: the pipeline's counters in Prometheus text format.
///
/// The counters are read from ``ImageDatabase/stats()`` at each scrape; Prometheus counters only
/// go up, so each scrape adds what happened since the last one. Thread-safe.
final class AppMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let last = Mutex(ImagePipeline.Stats?.none)
    private let hits: [String: Counter]
    private let originFetches: Counter
    private let revalidations: Counter
    private let refreshed: Counter
    private let staleAnswers: Counter
    private let failures: Counter
    private let corruptEntries: Counter
    private let diskFailures: Counter
    private let diskEntries: Gauge
    private let diskBytes: Gauge
    private let memoryEntries: Gauge
    private let memoryBytes: Gauge
    /// Per stage of the pipeline's scheduling: gauges of what runs and waits, counters of what
    /// started, waited, was refused or timed out.
    private let stageGauges: [String: [String: Gauge]]
    private let stageCounters: [String: [String: Counter]]
    private let waitingOriginalBytes: Gauge
    private let signatureFailures = Mutex<(counters: [String: Counter], last: [String: Int])>(([:], [:]))
    /// Requests refused at the edge of the app, by reason (see ``BrowserGuardMiddleware``).
    private let refusedRequests: [RefusedRequest: Counter]
    /// Connections the server cut, by reason (``ConnectionGuard/Cut``).
    private let cutConnections: [ConnectionGuard.Cut: Counter]

    /// Why a request was refused before any route saw it.
    enum RefusedRequest: String, CaseIterable {
        /// Its `Host` is not a name the app serves (421).
        case foreignHost = "foreign_host"
        /// A state-changing request from another site's page (403).
        case crossSite = "cross_site"
    }

    init() {
        let registry = registry
        func counter(_ name: String, _ help: String, labels: [(String, String)] = []) -> Counter {
            registry.makeCounter(descriptor: .init(namespace: "emojiart", metricName: name, unitName: "total", helpText: help), labels: labels)
        }
        func gauge(_ name: String, unit: String, _ help: String) -> Gauge {
            registry.makeGauge(descriptor: .init(namespace: "emojiart", metricName: name, unitName: unit, helpText: help))
        }
        let hitsHelp = "Lookups answered by a cache tier"
        hits = [
            "memory": counter("cache_hits", hitsHelp, labels: [("tier", "memory")]),
            "disk": counter("cache_hits", hitsHelp, labels: [("tier", "disk")]),
            "coalesced": counter("cache_hits", hitsHelp, labels: [("tier", "in_flight")]),
        ]
        originFetches = counter("origin_fetches", "Requests sent to the gallery, conditional ones included")
        revalidations = counter("revalidations", "Conditional requests the gallery answered 304 Not Modified")
        refreshed = counter("refreshed", "Conditional requests the gallery answered with new bytes")
        staleAnswers = counter("stale_answers", "Stale entries answered (stale-while-revalidate, or the gallery failing)")
        failures = counter("load_failures", "Image loads that failed")
        corruptEntries = counter("disk_corrupt_entries", "Disk entries that failed their integrity check")
        diskFailures = counter("disk_failures", "Disk operations that failed")
        diskEntries = gauge("disk", unit: "entries", "Entries in the disk cache")
        diskBytes = gauge("disk", unit: "bytes", "Bytes in the disk cache")
        memoryEntries = gauge("memory", unit: "entries", "Images in the memory cache")
        memoryBytes = gauge("memory", unit: "bytes", "Bytes in the memory cache")
        let gaugeHelp = [
            "running": "Work of a pipeline stage running now", "queued": "Work waiting in a pipeline stage's queue now",
            "max_running": "The most work a pipeline stage ever ran at once",
            "max_queued": "The longest a pipeline stage's queue ever was", "limit": "Work a pipeline stage runs at once",
        ]
        let counterHelp = [
            "started": "Work a pipeline stage started", "waited": "Work that waited in a pipeline stage's queue",
            "refused": "Background work refused because a stage's queue was full",
            "timed_out": "Work that waited past the interactive deadline and failed",
        ]
        stageGauges = gaugeHelp.reduce(into: [:]) { result, entry in
            result[entry.key] = Dictionary(uniqueKeysWithValues: Self.stages.map { stage in
                (stage, registry.makeGauge(
                    descriptor: .init(namespace: "emojiart", metricName: "stage_\(entry.key)", unitName: "", helpText: gaugeHelp[entry.key]!),
                    labels: [("stage", stage)]
                ))
            })
        }
        stageCounters = counterHelp.reduce(into: [:]) { result, entry in
            result[entry.key] = Dictionary(uniqueKeysWithValues: Self.stages.map { stage in
                (stage, counter("stage_\(entry.key)", entry.value, labels: [("stage", stage)]))
            })
        }
        waitingOriginalBytes = gauge("originals_waiting", unit: "bytes", "Bytes of originals waiting for their variant to be processed")
        refusedRequests = Dictionary(uniqueKeysWithValues: RefusedRequest.allCases.map { reason in
            (reason, counter("refused_requests", "Requests refused before any route: a Host the app does not serve, or a state-changing request from another site", labels: [("reason", reason.rawValue)]))
        })
        cutConnections = Dictionary(uniqueKeysWithValues: ConnectionGuard.Cut.allCases.map { reason in
            (reason, counter("connections_cut", "Connections closed by the server: past --max-connections, a request not received within --request-timeout, an answer not taken within it, a request body", labels: [("reason", reason.rawValue)]))
        })
    }

    /// Counts a request refused for `reason`.
    func refused(_ reason: RefusedRequest) {
        refusedRequests[reason]?.increment()
    }

    /// Counts a connection cut for `reason`.
    func connectionCut(_ reason: ConnectionGuard.Cut) {
        cutConnections[reason]?.increment()
    }

    /// The stages, as the `stage` label names them.
    static let stages = ["downloads", "processing", "disk_reads", "disk_writes"]

    static func stage(_ name: String, of stats: SchedulingStats) -> SchedulingStats.Stage {
        switch name {
        case "downloads": stats.downloads
        case "processing": stats.processing
        case "disk_reads": stats.diskReads
        default: stats.diskWrites
        }
    }

    /// The exposition after bringing the counters up to `stats` and the model's refused feeds,
    /// counted by reason (`emojiart_feed_signature_failures_total{reason="..."}`).
    func exposition(_ stats: ImagePipeline.Stats, signatureFailures refused: [String: Int]) -> [UInt8] {
        let registry = registry
        signatureFailures.withLock { state in
            for (reason, count) in refused {
                let counter = state.counters[reason] ?? registry.makeCounter(
                    descriptor: .init(namespace: "emojiart", metricName: "feed_signature_failures", unitName: "total",
                                      helpText: "Feeds refused because they could not be authenticated"),
                    labels: [("reason", reason)]
                )
                state.counters[reason] = counter
                let delta = count - (state.last[reason] ?? 0)
                if delta > 0 { counter.increment(by: Int64(delta)) }
            }
            state.last = refused
        }
        last.withLock { last in
            let before = last
            func add(_ counter: Counter, _ path: KeyPath<ImagePipeline.Stats, Int>) {
                let delta = stats[keyPath: path] - (before?[keyPath: path] ?? 0)
                if delta > 0 { counter.increment(by: Int64(delta)) }
            }
            add(hits["memory"]!, \.memoryHits)
            add(hits["disk"]!, \.diskHits)
            add(hits["coalesced"]!, \.coalesced)
            add(originFetches, \.originFetches)
            add(revalidations, \.revalidations)
            add(refreshed, \.refreshed)
            add(staleAnswers, \.staleAnswers)
            add(failures, \.failures)
            add(corruptEntries, \.corruptEntries)
            add(diskFailures, \.diskFailures)
            for name in Self.stages {
                let now = Self.stage(name, of: stats.scheduling)
                let then = before.map { Self.stage(name, of: $0.scheduling) }
                let counts = ["started": (now.started, then?.started), "waited": (now.waited, then?.waited),
                              "refused": (now.refused, then?.refused), "timed_out": (now.timedOut, then?.timedOut)]
                for (metric, (value, previous)) in counts where value - (previous ?? 0) > 0 {
                    stageCounters[metric]![name]!.increment(by: Int64(value - (previous ?? 0)))
                }
                let gauges = ["running": now.running, "queued": now.queued, "max_running": now.maxRunning,
                              "max_queued": now.maxQueued, "limit": now.limit]
                for (metric, value) in gauges { stageGauges[metric]![name]!.set(Int64(value)) }
            }
            last = stats
        }
        diskEntries.set(Int64(stats.diskEntries))
        diskBytes.set(Int64(stats.diskBytes))
        memoryEntries.set(Int64(stats.memoryEntries))
        memoryBytes.set(Int64(stats.memoryBytes))
        waitingOriginalBytes.set(Int64(stats.scheduling.waitingOriginalBytes))
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return bytes
    }
}
