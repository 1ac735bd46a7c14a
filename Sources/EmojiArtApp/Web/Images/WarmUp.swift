import Foundation
import GalleryFeed
import ImageCache
import Imaging
import Logging
import ServiceLifecycle
import Synchronization
import Clocks

/// Makes the catalog's thumbnails before anyone asks: once a feed is authenticated and its
/// images verified (the model is `ready`), every offered format (AVIF, WebP, PNG) of each
/// verified piece's thumbnail at 1x and 2x, the feed's first pieces first, so a first visit gets
/// the format and density it asks for from memory, as the tenth does.
///
/// - **Background work through the one background queue.** Each variant is a request at
///   ``ImageRequest/Priority/veryLow`` through ``ImagePrefetcher`` (into memory, then disk), in the
///   pipeline's stages and flights: a request somebody waits for goes first and, background work
///   taking at most `cores - 1` processors (``ImagePipeline/Limits/backgroundProcessing``; on one
///   core, the one), finds one free; a request of a variant being made joins its flight, which
///   then starts at once. `ready` does not wait for it.
/// - **Bounded.** Only the verified pieces of an authenticated feed; at most
///   ``AppServices/warmUpPixelBudget`` source pixels decoded an edition (each original's header
///   read first; one over ``AppServices/warmUpMaxSourcePixels`` is refused before any decode); at
///   most ``budget`` bytes of variants and half the memory cache's byte limit (so it takes no more than half of what
///   memory holds), and never past the disk's size limit less what waits to be written and twice
///   the largest batch, so it never evicts from disk an entry somebody asked for (a catalog of
///   thousands warms its first pages). A new feed edition cancels it (its requests not started
///   are withdrawn) and starts its own.
/// - **Seen.** ``progress`` (`warmUp` in `/stats` and the `stats` events, the toolbar's `warm-up`
///   counter): its state, the variants made of those planned, their bytes, and its seconds once
///   it ends.
final class WarmUp: Service, Sendable {
    /// Where the warm-up stands.
    struct Progress: Sendable, Hashable, Encodable {
        enum State: String, Sendable, Hashable, Encodable {
            /// No authenticated feed yet.
            case idle
            /// Making variants.
            case running
            /// Every planned variant was made (or failed).
            case done
            /// Stopped at its byte or pixel budget, or at the disk's room.
            case stopped
            /// A new feed edition came first.
            case cancelled
            /// Turned off (a budget of 0).
            case off
            /// A new feed edition waits for its start: one warm-up starts per
            /// ``AppServices/warmUpInterval`` at most.
            case deferred
        }

        var state: State
        /// Variants held, made now or found made.
        var made = 0
        /// Variants that could not be made (their piece's original failed, say).
        var failed = 0
        /// Variants planned for the feed's verified pieces.
        var total = 0
        /// Bytes of the variants held.
        var bytes = 0
        /// The byte budget.
        var budget: Int
        /// Variants not made because their original has more pixels than the warm-up decodes
        /// (``AppServices/warmUpMaxSourcePixels``), read from its header.
        var refused = 0
        /// Source pixels decoded for this edition: each original's once.
        var pixels = 0
        /// The most source pixels it decodes for an edition (``AppServices/warmUpPixelBudget``).
        var pixelBudget = 0
        /// From the start to the end, once ended.
        var seconds: Double?
        /// How many warm-ups were started: each feed edition starts one.
        var runs = 0

        /// Whether it is over (done, stopped, cancelled or off).
        var ended: Bool { state != .idle && state != .running && state != .deferred }

        private enum Key: String, CodingKey {
            case state, made, failed, refused, total, bytes, budget, pixels, pixelBudget, seconds, runs, text
        }

        /// Its fields, and ``text`` for the page's script to show.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(state, forKey: .state)
            try container.encode(made, forKey: .made)
            try container.encode(failed, forKey: .failed)
            try container.encode(refused, forKey: .refused)
            try container.encode(total, forKey: .total)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(budget, forKey: .budget)
            try container.encode(pixels, forKey: .pixels)
            try container.encode(pixelBudget, forKey: .pixelBudget)
            try container.encodeIfPresent(seconds, forKey: .seconds)
            try container.encode(runs, forKey: .runs)
            try container.encode(text, forKey: .text)
        }

        /// What the toolbar's `warm-up` counter says.
        var text: String {
            switch state {
            case .idle: "waiting"
            case .running: "\(made) of \(total)"
            case .done: "\(made) of \(total), done"
            case .stopped: "\(made) of \(total), budget reached"
            case .cancelled: "\(made) of \(total), cancelled"
            case .off: "off"
            case .deferred: "\(made) of \(total), next edition soon"
            }
        }
    }

    /// Pieces warmed per batch: the batch's variants are asked for at once, then the budget is
    /// checked again.
    static let batchPieces = 2

    let services: AppServices
    /// The most bytes of variants it makes (``AppConfiguration/warmUpBudget``).
    var budget: Int { services.warmUpBudget }
    /// The warm-up's own prefetcher (``AppServices/warmer``).
    var prefetcher: ImagePrefetcher { services.warmer }
    /// Where it stands, live (``AppServices/warmUp``).
    var progress: LiveValue<Progress> { services.warmUp }

    /// When the last warm-up started, on ``clock``.
    private let lastStart = Mutex<AnyClock<Duration>.Instant?>(nil)
    /// The clock starts are spaced on (tests pass one they move by hand).
    private let clock: AnyClock<Duration>

    /// The warm-up of `services`' model, within its budgets, its starts spaced on `clock`.
    init(services: AppServices, clock: some Clock<Duration> = ContinuousClock()) {
        self.services = services
        self.clock = (clock as? AnyClock<Duration>) ?? AnyClock(clock)
    }

    /// A new warm-up's progress: idle, or off for a budget of 0.
    static func initial(budget: Int) -> LiveValue<Progress> {
        LiveValue(Progress(state: budget > 0 ? .idle : .off, budget: max(0, budget)))
    }

    /// Follows the model: a `ready` with another feed edition than the one warmed starts a
    /// warm-up for it, at most one per ``AppServices/warmUpInterval`` (an edition within it waits,
    /// ``Progress/State/deferred``, and is planned afresh when its time comes); a new feed being
    /// loaded or verified cancels the one under way or waiting (an unchanged feed never leaves
    /// `ready`). Until the app shuts down; at once with a budget of 0 (the app then does not run
    /// it).
    func run() async throws {
        guard budget > 0 else { return }
        await cancelWhenGracefulShutdown { [self] in
            var current: (edition: [String], task: Task<Void, Never>)?
            for await phase in services.model.phase.stream() {
                guard phase == .ready else {
                    current?.task.cancel()
                    continue
                }
                let plan = await plan()
                let edition = plan.map(\.checksum)
                if let current, current.edition == edition, !current.task.isCancelled { continue }
                current?.task.cancel()
                await current?.task.value
                let startAt = lastStart.withLock { $0 }.map { $0.advanced(by: services.warmUpInterval) }
                if let startAt, startAt > clock.now {
                    progress.update { $0.state = .deferred }
                    current = (edition, Task {
                        // Cancelled meanwhile (a newer edition, shutdown): not started.
                        do { try await self.clock.sleep(until: startAt) } catch { return }
                        self.lastStart.withLock { $0 = self.clock.now }
                        await self.warm(await self.plan())
                    })
                } else {
                    lastStart.withLock { $0 = clock.now }
                    current = (edition, Task { await self.warm(plan) })
                }
            }
            current?.task.cancel()
            await current?.task.value
        }
    }

    /// One piece's variants to make, with the checksum of the feed entry they were planned for.
    struct Piece: Sendable {
        let number: Int
        let checksum: String
        /// The original the variants are made from, as verification cached it.
        let source: ImageRequest
        let requests: [ImageRequest]
    }

    /// The verified pieces of the model's feed, in feed order (each once), each with its
    /// thumbnail in every offered format at 1x and 2x.
    func plan() async -> [Piece] {
        Self.plan(await services.model.entries, model: services.model, processors: services.processors, formats: services.formats)
    }

    /// The verified pieces of `entries`, in their order (each once), each with its thumbnail
    /// (`processors`' `.thumbs` kinds) in each of `formats` at 1x and 2x: the requests the image
    /// routes make for them (the same cache keys). Shared by the app and `emojiart sync --variants`.
    static func plan(
        _ entries: [(file: ImageFile, status: VerificationStatus)], model: EmojiArtModel, processors: [VariantKind: ThumbnailProcessor],
        formats: [ServedFormat]
    ) -> [Piece] {
        var seen = Set<Int>()
        var pieces: [Piece] = []
        for (file, status) in entries where status == .verified {
            guard let number = file.pieceNumber, seen.insert(number).inserted else { continue }
            var requests: [ImageRequest] = []
            for density in VariantKind.densities {
                for format in formats {
                    guard let processor = processors[VariantKind(route: .thumbs, density: density, format: format)] else { continue }
                    requests.append(model.imageRequest(file, processor: processor))
                }
            }
            pieces.append(Piece(number: number, checksum: file.checksum, source: model.imageRequest(file), requests: requests))
        }
        return pieces
    }

    /// Makes `plan`'s variants, a batch of pieces at a time, within the budget and the disk's
    /// room; cancelled, it withdraws the requests not started and says so.
    func warm(_ plan: [Piece]) async {
        let clock = ContinuousClock()
        let start = clock.now
        let pipeline = services.pipeline
        let budget = min(self.budget, pipeline.configuration.memoryCostLimit / 2)
        let pixelBudget = services.warmUpPixelBudget
        progress.update { progress in
            progress = Progress(
                state: .running, total: plan.reduce(0) { $0 + $1.requests.count }, budget: budget, pixelBudget: pixelBudget,
                runs: progress.runs + 1
            )
        }
        // Only a header is read here: the pixels an original would cost are known before anyone decodes it.
        let headers = Imaging(limits: Imaging.Limits(maxPixels: services.warmUpMaxSourcePixels))
        let diskLimit = pipeline.configuration.diskSizeLimit
        var largestBatch = 1 << 20  // a margin before the first batch is measured
        var end = Progress.State.done
        var index = 0
        while index < plan.count {
            if Task.isCancelled {
                end = .cancelled
                break
            }
            let stats = await pipeline.stats()
            let (bytes, diskBytes) = (progress.value.bytes, stats.diskBytes + stats.pendingWriteBytes)
            if bytes >= budget || (pipeline.disk != nil && diskBytes + 2 * largestBatch >= diskLimit) {
                end = .stopped
                break
            }
            var pieces: [Piece] = []
            var refused = 0
            var overBudget = false
            for piece in plan[index..<min(index + Self.batchPieces, plan.count)] {
                switch await Self.sourcePixels(of: piece, in: pipeline, headers: headers) {
                case .refused:
                    refused += piece.requests.count
                    continue
                case let .pixels(count):
                    if progress.value.pixels + count > pixelBudget {
                        overBudget = true
                        break
                    }
                    progress.update { $0.pixels += count }
                case .unknown:
                    break
                }
                if overBudget { break }
                pieces.append(piece)
            }
            if refused > 0 { progress.update { $0.refused += refused } }
            index += Self.batchPieces
            let batch = pieces.flatMap(\.requests)
            let made = await withTaskCancellationHandler {
                await prefetcher.prefetch(batch)
            } onCancel: { [prefetcher] in
                Task { @ImageDatabase in prefetcher.stopPrefetching(with: batch) }
            }
            let batchBytes = batch.reduce(0) { $0 + (pipeline.memory.peek($1.cacheKey)?.byteCount ?? 0) }
            largestBatch = max(largestBatch, batchBytes)
            progress.update { progress in
                progress.made += made
                progress.failed += batch.count - made
                progress.bytes += batchBytes
            }
            // The next original would take the edition past its pixels: none is decoded after it.
            if overBudget {
                end = .stopped
                break
            }
        }
        if Task.isCancelled { end = .cancelled }
        let seconds = Self.seconds(clock.now - start)
        progress.update { progress in
            progress.state = end
            progress.seconds = seconds
        }
        let ended = progress.value
        services.model.logger.info(
            "warm-up \(end.rawValue): \(ended.made) of \(ended.total) thumbnail variants held (\(ended.bytes / 1024) KB, \(ended.failed) failed) in \(String(format: "%.1f", seconds)) s"
        )
    }

    /// What the original of `piece` would cost to decode.
    enum SourcePixels {
        /// Its header's width x height.
        case pixels(Int)
        /// More than the warm-up decodes, or not an image it can read: not to be decoded here.
        case refused
        /// Not in the cache (then its variants fail to be made without it).
        case unknown
    }

    /// The pixels of `piece`'s original, read from its header as the cache holds it (`headers`'
    /// limits: an original over them is ``SourcePixels/refused``), before anything decodes it.
    static func sourcePixels(of piece: Piece, in pipeline: ImagePipeline, headers: Imaging) async -> SourcePixels {
        guard let original = await pipeline.storedImage(forKey: piece.source.cacheKey) else { return .unknown }
        do {
            let info = try original.withUnsafeBytes { try headers.probe(bytes: $0) }
            return .pixels(info.width * info.height)
        } catch {
            return .refused
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
