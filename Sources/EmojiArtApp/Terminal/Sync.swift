public import Foundation
public import ImageCache
public import GalleryFeed
import Imaging

/// `emojiart sync`: load the feed, verify it, fetch every thumbnail, and report.
public struct Sync: Sendable {
    /// What a sync found.
    public struct Report: Sendable {
        /// Verification counts.
        public var progress: VerificationProgress
        /// Distinct thumbnails made or found (the feed lists each piece three times).
        public var thumbnails: Int
        /// With ``Sync/variants``: the thumbnail variants made or found (every format this machine
        /// can write at 1x and 2x of each verified piece, as the app's warm-up makes them with its
        /// default `--formats`); `nil` without.
        public var variants: Int?
        /// With ``Sync/variants``: how many were planned; fewer made fails the sync.
        public var variantsPlanned: Int?
        /// The cache's counters at the end.
        public var stats: ImagePipeline.Stats
        /// Wall time.
        public var duration: Duration
        /// Entries that did not verify, with why.
        public var problems: [(file: ImageFile, status: VerificationStatus)]
        /// The key the feed was authenticated with.
        public var feedKey: EmojiArtModel.FeedKey?

        /// Where the feed came from.
        public var feedOrigin: EmojiArtModel.FeedOrigin?
        /// When the feed was last authenticated, and until when its prices are current.
        public var feedAge: EmojiArtModel.FeedAge?
        /// When the sync ended, on the model's clock: what ``feedAge`` is judged at.
        public var finishedAt: Date = Date()

        /// Success means every present image verified: no mismatch, no failure and nothing
        /// missing from the cache offline (missing pieces are expected: the gallery never has 0,
        /// 10 and 20).
        public var succeeded: Bool {
            progress.mismatched == 0 && progress.failed == 0 && progress.notCached == 0 && variants == variantsPlanned
        }
    }

    /// The model doing the work.
    public let model: EmojiArtModel
    /// The thumbnail variant fetched for every piece.
    public let thumbnail: ThumbnailProcessor
    /// Whether to make every verified piece's thumbnail in every format this machine can
    /// write at 1x and 2x too, as the app's warm-up does (`--variants`).
    public let variants: Bool
    private let formats: [ServedFormat]
    private let processors: [VariantKind: ThumbnailProcessor]

    /// Creates a sync over `model` fetching `thumbnailSize` thumbnails, and with `variants` the
    /// app's thumbnail variants.
    public init(model: EmojiArtModel, thumbnailSize: Int = 200, variants: Bool = false) {
        self.model = model
        self.variants = variants
        // The app's processors (the same keys, so the app finds what sync made), sharing each
        // original's shrink: the 1x PNG, and with `variants` every format at 1x and 2x.
        formats = variants ? AppConfiguration.offered(ServedFormat.allCases).filter { Imaging().canEncode($0.output) } : [.png]
        processors = AppServices.processors(boxes: [.thumbs: thumbnailSize], formats: formats)
        thumbnail = processors[VariantKind(route: .thumbs, density: 1, format: .png)]!
    }

    /// Runs the sync. `onProgress` is called with each progress update.
    /// - Throws: ``EmojiArtModel/Error`` when the feed cannot be loaded.
    public func run(onProgress: @escaping @Sendable (VerificationProgress) -> Void = { _ in }) async throws -> Report {
        let clock = ContinuousClock()
        let start = clock.now
        try await model.loadImages()
        let follower = Task {
            for await progress in model.progress.stream() { onProgress(progress) }
        }
        let progress = await model.verifyImages()
        follower.cancel()
        onProgress(progress)
        let entries = await model.entries
        let verified = Dictionary(entries.filter { $0.status == .verified }.map { ($0.file.url, $0.file) }) { first, _ in first }
        let thumbnails = await withTaskGroup(of: Bool.self) { group in
            for file in verified.values {
                let request = model.imageRequest(file, processor: thumbnail)
                group.addTask { (try? await model.pipeline.image(for: request)) != nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        var (variantCount, variantsPlanned): (Int?, Int?) = (nil, nil)
        if variants {
            let requests = WarmUp.plan(entries, model: model, processors: processors, formats: formats).flatMap(\.requests)
            variantsPlanned = requests.count
            // At most 64 asked at once: a catalog of thousands stays within the stages' queues.
            variantCount = await withTaskGroup(of: Bool.self) { group in
                var made = 0
                for (index, request) in requests.enumerated() {
                    if index >= 64, let done = await group.next() { made += done ? 1 : 0 }
                    group.addTask { (try? await model.pipeline.image(for: request)) != nil }
                }
                for await done in group { made += done ? 1 : 0 }
                return made
            }
        }
        // Answers do not wait for their disk writes: the report (and the process's exit) does.
        await model.pipeline.flush()
        return Report(
            progress: progress,
            thumbnails: thumbnails,
            variants: variantCount,
            variantsPlanned: variantsPlanned,
            stats: await model.pipeline.stats(),
            duration: start.duration(to: clock.now),
            problems: entries.filter { $0.status != .verified },
            feedKey: model.feedKey.value,
            feedOrigin: model.feedOrigin.value,
            feedAge: model.feedAge.value,
            finishedAt: model.now()
        )
    }
}
