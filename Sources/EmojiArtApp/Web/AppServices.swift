import Foundation
import ImageCache
import ImageService
import Mustache
import Synchronization
import GalleryFeed
import Imaging
import ServiceLifecycle
import FastLane
import Hummingbird
import HTTPTypes

/// What the web app's controllers share. Immutable and `Sendable`: the state lives in the model
/// (an actor) and the pipeline (a global actor).
struct AppServices: Sendable {
    let model: EmojiArtModel
    let pipeline: ImagePipeline
    let templates: MustacheLibrary
    /// The processor of every variant the routes serve: each route's box at each density, in
    /// each offered format.
    let processors: [VariantKind: ThumbnailProcessor]
    /// The side of each route's box at 1x, in pixels.
    let boxes: [ImageRoute: Int]
    /// The formats offered, smallest first; PNG always among them.
    let formats: [ServedFormat]
    let metrics: AppMetrics
    /// Loads the details variants ahead, at low priority, once the catalog is shown.
    let prefetcher: ImagePrefetcher
    /// Makes, in the background, the variants in a format slow to encode that a request found
    /// not made (a stand-in answered it): requests at very low priority through the pipeline's
    /// stages, so work somebody waits for goes first.
    let encoder: ImagePrefetcher
    /// Makes the catalog's thumbnails ahead once a feed is authenticated (``WarmUp``): the same
    /// background priority and destination as ``encoder``, a prefetcher of its own so its
    /// requests can be withdrawn alone.
    let warmer: ImagePrefetcher
    /// The warm-up's progress, live.
    let warmUp: LiveValue<WarmUp.Progress>
    /// The most bytes of variants the warm-up makes (``AppConfiguration/warmUpBudget``).
    let warmUpBudget: Int
    /// The most source pixels the warm-up decodes a feed edition
    /// (``AppConfiguration/warmUpPixelBudget``).
    let warmUpPixelBudget: Int
    /// The largest original the warm-up decodes (``AppConfiguration/warmUpMaxSourcePixels``).
    let warmUpMaxSourcePixels: Int
    /// The least time between two warm-up starts: the feed check interval
    /// (``AppConfiguration/feedCheckInterval``), so an edition a check finds starts at most one.
    let warmUpInterval: Duration
    /// The `stats` events of every open `/events` stream, made once for all.
    let statsBroadcast: StatsBroadcast
    /// The `/events` streams open, at most ``AppConfiguration/maxEventStreams``.
    let eventStreams: EventStreamSlots
    /// Whether a loopback peer's `EmojiArt-Client-Address` names the client
    /// (``AppConfiguration/clientAddressFromEdge``).
    let clientAddressFromEdge: Bool
    /// How often each `/events` stream sends a comment (``AppConfiguration/eventStreamHeartbeat``).
    let eventStreamHeartbeat: Duration
    /// How long each `/events` stream lasts (``AppConfiguration/eventStreamLifetime``).
    let eventStreamLifetime: Duration
    /// How browsers and proxies may cache the image answers.
    let httpCache: HTTPCacheMode
    /// The instance name the toolbar shows, if any.
    let instanceName: String?
    /// The names in `Host` the app answers to.
    let allowedHosts: AllowedHosts
    /// The image service beside the app, if any (its `/metrics` are the app's too).
    var imageService: ImageServer? = nil
    /// Each piece's variants as the image routes serve them: request, `v=`, ETag, answer.
    let variants = ServedVariants()
    /// The catalog's pages as rendered, answered from memory while what they show is unchanged.
    let catalogPages = CatalogPages()

    /// What runs beside the server, as `Service`s of the app (stopped at its graceful shutdown).
    /// (A service that returns ends the app: the warm-up runs only with a budget.)
    var backgroundServices: [any Service] {
        [statsBroadcast] + (warmUpBudget > 0 ? [WarmUp(services: self)] : []) + [WritesAtShutdown(pipeline: pipeline)]
    }

    /// The field an edge in front names a request's client in (``clientAddressFromEdge``).
    static let clientAddressField = HTTPField.Name("EmojiArt-Client-Address")!

    /// The client `request` is counted for (its `/events` streams): the connection's peer
    /// address, or, behind an edge (``clientAddressFromEdge``) and from a loopback peer, the
    /// address the edge names; `"unknown"` outside a connection (a router test).
    func clientKey(_ request: Request) -> String {
        let peer = FastLaneHTTP1Channel.clientAddress?.ipAddress
        if clientAddressFromEdge, let named = request.headers[Self.clientAddressField], !named.isEmpty,
           peer.map({ $0.hasPrefix("127.") || $0 == "::1" || $0 == "::ffff:127.0.0.1" }) ?? true {
            return String(named.prefix(64))
        }
        return peer ?? "unknown"
    }

    /// Makes the processors of `boxes` at every density in `formats`. They share one
    /// ``ShrunkOriginals``: each original is decoded once (a JPEG or WebP shrunk to its route's
    /// largest box, the 2x), and each variant is made from those pixels; but a PNG variant (made
    /// while somebody waits) streams a PNG original that nothing has decoded yet, with the same
    /// bytes, so its answer is as quick as it was before the store.
    static func processors(boxes: [ImageRoute: Int], formats: [ServedFormat]) -> [VariantKind: ThumbnailProcessor] {
        var processors: [VariantKind: ThumbnailProcessor] = [:]
        let shrinks = ShrunkOriginals()
        for (route, box) in boxes {
            let shrinkBox = box * VariantKind.densities.max()!
            for density in VariantKind.densities {
                for format in formats {
                    // The format made while somebody waits streams a PNG original nothing has decoded yet.
                    processors[VariantKind(route: route, density: density, format: format)] = ThumbnailProcessor(
                        size: box * density, format: format.output(density: density), shrinkBox: shrinkBox, sharing: shrinks,
                        streamsWhenNothingIsKept: format.isQuickToEncode
                    )
                }
            }
        }
        return processors
    }

    /// Prefetches the details variants (1x, in `format`) of `pieces`.
    func prefetchDetails(of pieces: [Int], format: ServedFormat) {
        // Chosen off the page's answer (each original's header is read, from memory or disk),
        // then started. Held already, or loading: skipped by the prefetcher; loading for
        // somebody: joined.
        Task(priority: .background) { [self] in
            await prefetcher.startPrefetching(with: await detailRequests(of: pieces, format: format))
        }
    }

    /// The details variants ``prefetchDetails(of:format:)`` makes in the background: bounded as the
    /// warm-up's work is, only of originals held and within ``warmUpMaxSourcePixels`` by their
    /// headers (read in place; nothing decoded). A larger one is made when somebody asks for it.
    func detailRequests(of pieces: [Int], format: ServedFormat) async -> [ImageRequest] {
        let kind = VariantKind(route: .large, density: 1, format: format)
        let headers = Imaging(limits: Imaging.Limits(maxPixels: warmUpMaxSourcePixels))
        var requests: [ImageRequest] = []
        for piece in pieces {
            guard let request = variant(piece: piece, kind: kind)?.request,
                  let original = await pipeline.storedImage(forKey: request.original.cacheKey),
                  (try? original.withUnsafeBytes({ try headers.probe(bytes: $0) })) != nil
            else { continue }
            requests.append(request)
        }
        return requests
    }

    /// Forgets the kept catalog pages (the disk was cleared): the next catalog load renders
    /// them again, and prefetches.
    func forgetPrefetches() {
        // A kept page prefetches nothing: the next load renders it again, and prefetches.
        catalogPages.removeAll()
    }

    /// The `v=` of piece `file`'s variant in ``HTTPCacheMode/immutable`` URLs: 16 hex digits of
    /// the SHA-256 of the original's checksum and the identifiers of the variant's processors in
    /// every format offered (box, the box shrunk to first, encoder settings), so a new original,
    /// another box or other settings give a new URL, known before the variant is made. One URL
    /// serves every offered format, by `Accept`.
    static func version(_ file: ImageFile, processors: [ThumbnailProcessor]) -> String {
        let identifiers = processors.map(\.identifier).joined(separator: ",")
        return String(SHA256Hex.digest(Array("\(file.checksum)\n\(identifiers)".utf8)).prefix(16))
    }

    /// The `v=` of `file`'s variant of `route` at `density`, with this app's processors.
    func version(_ file: ImageFile, route: ImageRoute, density: Int) -> String {
        Self.version(file, processors: formats.compactMap { processors[VariantKind(route: route, density: density, format: $0)] })
    }

    /// The path and query of `file`'s variant of `route` at `density` in this mode
    /// (`/thumbs/2x/5?v=...` when immutable). The `v=` is the one the variant keeps (made once
    /// per feed entry, the same for every format): the page does not hash it again for each
    /// card it draws.
    func url(_ file: ImageFile, route: ImageRoute, density: Int) -> String {
        let path = "/\(route.rawValue)/" + (density == 1 ? "" : "\(density)x/") + "\(file.pieceNumber ?? -1)"
        guard httpCache == .immutable, let piece = file.pieceNumber,
              let variant = variant(piece: piece, kind: VariantKind(route: route, density: density, format: .png))
        else { return path }
        return path + "?v=" + variant.version
    }

    /// Piece `number`'s variant of `kind`, made once per feed entry; `nil` when the feed has no
    /// such piece.
    func variant(piece number: Int, kind: VariantKind) -> ServedVariant? {
        entry(piece: number, kind: kind)?.variant
    }

    /// Piece `number`'s entry for `kind`: its variant, made now if the feed entry is new, with
    /// the answer prepared so far; `nil` when the feed has no such piece or the format is not
    /// offered.
    func entry(piece number: Int, kind: VariantKind) -> ServedVariants.Entry? {
        // Every image request asks: the checksum alone is read from the feed, not its entry.
        guard let checksum = model.feedByPiece.read({ $0[number]?.checksum }) else { return nil }
        let key = ServedVariants.Key(piece: number, kind: kind)
        if let entry = variants.entry(key, checksum: checksum) { return entry }
        guard let file = model.feedByPiece.value[number], let processor = processors[kind] else { return nil }
        var request = model.imageRequest(file, processor: processor)
        request.priority = .high
        let variant = ServedVariant(key: key, checksum: file.checksum, request: request, version: version(file, route: kind.route, density: kind.density))
        variants.add(variant, for: key)
        return ServedVariants.Entry(variant: variant)
    }

    /// Renders a template with the toolbar's current counters added to `context`.
    func render(_ template: String, _ context: [String: Any]) async -> String {
        render(template, context, counters: await counters().mapValues { $0 as Any })
    }

    /// Renders a template with `counters` (by name, as ``counters()`` names them) for the
    /// toolbar's counters.
    func render(_ template: String, _ context: [String: Any], counters: [String: Any]) -> String {
        var context = context
        context["stats"] = counters
        context["warmUp"] = warmUp.value.text
        if let instanceName { context["instance"] = instanceName }
        return templates.render(context, withTemplate: template) ?? "template \(template) is missing"
    }

    /// The toolbar's counters now, by the names the templates use.
    func counters() async -> [String: Int] {
        let stats = await pipeline.stats()
        return [
            "memoryHits": stats.memoryHits, "diskHits": stats.diskHits, "originFetches": stats.originFetches,
            "revalidations": stats.revalidations, "refreshed": stats.refreshed, "staleAnswers": stats.staleAnswers,
        ]
    }
}

/// At the app's graceful shutdown, waits for the disk writes of images already answered
/// (answers do not wait for them), so a stopped app leaves every answered image on disk.
struct WritesAtShutdown: Service {
    let pipeline: ImagePipeline

    func run() async throws {
        try? await gracefulShutdown()
        await pipeline.flush()
    }
}
