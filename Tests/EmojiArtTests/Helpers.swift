@testable import EmojiArtApp
import FastLane
import Hummingbird
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GalleryServer
import ImageCache
import MessageSignatures
import TestSupport

/// Runs a real gallery on 127.0.0.1:0 with `faults` (and `gate` holding its image requests, when
/// given), and hands `body` a fresh pipeline and the gallery's URL.
func withGallery<T: Sendable>(
    faults: FaultInjection = .none,
    gate: ImageGate? = nil,
    catalog: ArtCatalog = .book,
    loader: ImagePipeline.Configuration = .init(),
    _ body: (_ galleryURL: URL, _ pipeline: ImagePipeline) async throws -> T
) async throws -> T {
    let directory = TemporaryDirectory()
    let configuration = GalleryConfiguration(
        port: 0, faults: faults, imageGate: gate, signingKey: testGalleryKey, catalog: catalog
    )
    return try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
        // As the app's: over the gallery's client, which follows no redirect.
        var configuration = loader
        (configuration.diskDirectory, configuration.synchronizesWrites) = (directory.url, false)
        configuration.fetcher = EmojiArtModel.galleryFetcher()
        let pipeline = ImagePipeline(configuration: configuration)
        return try await body(URL(string: "http://127.0.0.1:\(port)")!, pipeline)
    }
}

/// Reads a running gallery's counter of requests for each piece from its /metrics.
func galleryImageRequests(_ galleryURL: URL) async throws -> [Int: Int] {
    let (data, _) = try await URLSession.shared.data(from: galleryURL.appendingPathComponent("metrics"))
    var counts: [Int: Int] = [:]
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix("gallery_image_requests_total{") {
        let piece = line.split(separator: "\"")[1]
        if let number = Int(piece), let value = line.split(separator: " ").last.flatMap({ Double($0) }) {
            counts[number] = Int(value)
        }
    }
    return counts
}

/// The key every test gallery signs its feed with.
let testGalleryKey = SigningKey()

/// Where the test galleries' trust files are: one directory per test process.
let testTrustDirectory = TemporaryDirectory("emojiart-test-trust")

/// A trust file of its own, in ``testTrustDirectory``.
func testTrustStore() -> TrustStore {
    TrustStore(file: testTrustDirectory.url.appendingPathComponent("\(UUID().uuidString).json"))
}

/// Trust in exactly the test galleries' key, with a trust file of its own: no test reads or
/// writes the machine's trust file, and no test sees the newest signature another accepted.
var testGalleryTrust: GalleryTrust { .pinned(fingerprint: testGalleryKey.fingerprint, store: testTrustStore()) }

/// A model of the gallery at `galleryURL` that trusts the test galleries' key; its feed must
/// name `galleryOrigin` (by default the origin of `galleryURL`; a proxy's tests pass the
/// gallery's behind it, as `--gallery-origin` does). Catalog loads check the feed each time
/// (a `feedCheckInterval` of zero): the tests of what a check does are not about how often;
/// `FeedCheckIntervalTests` hold the model's own default.
func makeModel(
    _ galleryURL: URL, _ pipeline: ImagePipeline, concurrency: Int = 8, galleryOrigin: String? = nil,
    feedCheckInterval: Duration = .zero
) -> EmojiArtModel {
    EmojiArtModel(
        galleryURL: galleryURL, pipeline: pipeline, concurrency: concurrency, trust: testGalleryTrust, galleryOrigin: galleryOrigin,
        feedCheckInterval: feedCheckInterval
    )
}

/// A real app server on 127.0.0.1:0 (fast lane on unless `fastLane` is false, text compressed as
/// the app does) against a real gallery, after verification finished, with `allowedHosts`
/// (`--allowed-host`), and whatever else `configure` sets.
func withVerifiedApp(
    allowedHosts: [String] = [], fastLane: Bool = true, configure: (inout AppConfiguration) -> Void = { _ in },
    _ body: (_ port: Int, _ pipeline: ImagePipeline, _ services: AppServices) async throws -> Void
) async throws {
    try await withGallery { galleryURL, pipeline in
        try await withVerifiedApp(
            galleryURL: galleryURL, pipeline: pipeline, trust: testGalleryTrust, allowedHosts: allowedHosts,
            fastLane: fastLane, configure: configure, body
        )
    }
}

/// A real app server on 127.0.0.1:0 (fast lane on) against the gallery at `galleryURL`, after
/// verification finished. Without a warm-up (``WarmUp``) unless `configure` gives it a budget
/// (then after its end and its writes): these tests are about the routes, and 156 variants made
/// beside every one of them, in debug builds on a busy machine, took up to a minute each.
func withVerifiedApp(
    galleryURL: URL, pipeline: ImagePipeline, trust: GalleryTrust, allowedHosts: [String] = [], fastLane: Bool = true,
    configure: (inout AppConfiguration) -> Void = { _ in },
    _ body: (_ port: Int, _ pipeline: ImagePipeline, _ services: AppServices) async throws -> Void
) async throws {
    var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: trust, allowedHosts: allowedHosts)
    configuration.warmUpBudget = 0
    configure(&configuration)
    let model = EmojiArtModel(galleryURL: galleryURL, pipeline: pipeline, concurrency: 8, trust: trust)
    let (router, services) = try EmojiArtApp.buildRouterAndServices(configuration, model: model, pipeline: pipeline)
    await model.loadAndVerify()
    let lane = fastLane ? FastLane(serverName: "EmojiArt", respond: ImageController<BasicRequestContext>(services: services).fastLane) : nil
    try await withLiveServer({ running in
        Application(
            // As the app: text answers compressed behind the lane (TextCompression).
            responder: router.buildResponder(), server: .http1(fastLane: lane, additionalChannelHandlers: { TextCompression.handlers() }),
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "EmojiArt"),
            // As the app: the background encoder stops with the server (nothing is made into
            // the test's directory once it is gone).
            services: services.backgroundServices,
            onServerRunning: { await running($0.localAddress?.port ?? 0) }
        )
    }) { port in
        for await progress in services.warmUp.stream() where progress.ended { break }
        await pipeline.flush()  // and its disk writes
        try await body(port, pipeline, services)
    }
}
