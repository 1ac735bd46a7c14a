import AsyncHTTPClient
import Crypto
import EmojiArtApp
import Foundation
import GalleryFeed
import GalleryServer
import HTTPCaching
import Hummingbird
import HummingbirdTesting
import ImageCache
import MessageSignatures
import NIOCore
import NIOFoundationEssentialsCompat
import NIOHTTP1
import Testing
import TestSupport

/// The book's promise for real: the gallery signs its feed, and the app refuses any feed that
/// does not verify with the gallery's key, before it uses a single entry.
@Suite struct FeedSignatureTests {
    @Test func aSignedFeedVerifiesAndThePublishedKeyIsTheFingerprint() async throws {
        try await withGallery { galleryURL, pipeline in
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: galleryURL.absoluteString + "/gallery/key"), timeout: .seconds(30))
            #expect(response.headers.first(name: "content-type") == "application/jwk+json")
            let jwk = try JSONDecoder().decode(JSONWebKey.self, from: Data(buffer: try await response.body.collect(upTo: 10_000)))
            #expect(jwk.kty == "OKP" && jwk.crv == "Ed25519" && jwk.kid == jwk.thumbprint)
            #expect(jwk.thumbprint == testGalleryKey.fingerprint)
            #expect(try jwk.publicKey().rawRepresentation == testGalleryKey.privateKey.publicKey.rawRepresentation)

            var request = HTTPClientRequest(url: galleryURL.absoluteString + "/gallery/images")
            request.headers.add(name: "EmojiArt-Feed-Nonce", value: FeedNonce.make())
            let feed = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let body = try await feed.body.collect(upTo: 1_000_000)
            let input = try #require(feed.headers.first(name: "signature-input"))
            #expect(input.hasPrefix(#"feed=("@status" "etag" "content-type" "content-digest" "emojiart-gallery-origin" "emojiart-feed-nonce";req);created="#))
            #expect(feed.headers.first(name: "emojiart-gallery-origin") == galleryURL.originKey)
            #expect(input.contains(#"keyid="\#(jwk.thumbprint)""#) && input.contains(#"alg="ed25519""#) && input.contains(";expires="))
            #expect(feed.headers.first(name: "content-digest") == ContentDigest.fieldValue(for: body.readableBytesView))

            let model = makeModel(galleryURL, pipeline)
            #expect(try await model.loadImages().count == 87)
            #expect(model.feedKey.value == .init(fingerprint: jwk.thumbprint, trustedOnFirstUse: false))

            // Images carry their digest too.
            let image = try await HTTPClient.shared.execute(HTTPClientRequest(url: galleryURL.absoluteString + "/gallery/image?4"), timeout: .seconds(30))
            let imageBody = try await image.body.collect(upTo: 1_000_000)
            #expect(image.headers.first(name: "content-digest") == ContentDigest.fieldValue(for: imageBody.readableBytesView))
        }
    }

    /// A gallery serves its own images: a feed, even one signed by the trusted key, that lists an
    /// image at another origin (another host, a port of this machine, another scheme) is refused
    /// whole, and nothing is fetched from there; the catalog in use stays.
    @Test(arguments: ["http://127.0.0.1:PORT/images/admin?delete=1&x?31", "//127.0.0.1:PORT/images/creds?32", "file:///etc/passwd?33"])
    func aFeedListingAnImageElsewhereIsRefused(url: String) async throws {
        let elsewhere = TestOrigin()
        try await elsewhere.run { (elsewhereURL) async throws in
            let entry = url.replacingOccurrences(of: "PORT", with: "\(elsewhereURL.port ?? 0)")
            let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!)
            try await proxy.inFrontOfGallery { proxyURL, pipeline in
                let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
                try await model.loadImages()
                let listed = await model.imageFeed
                let storedKey = proxyURL.absoluteString + "/gallery/images#verified-by=" + testGalleryKey.fingerprint
                let stored = try #require(await pipeline.storedImage(forKey: storedKey))
                proxy.attack(.resign(testGalleryKey) { $0[1].url = entry })
                guard let reason = await invalidFeedReason(loading: model) else { return }
                #expect(reason.contains("entry 1 (\(entry)) is not at the gallery's own origin"), "\(reason)")
                #expect(await model.imageFeed == listed, "the catalog in use stays")
                #expect(await pipeline.storedImage(forKey: storedKey)?.data == stored.data, "and the feed stored")
                await model.verifyImages()
                #expect(elsewhere.totalRequests == 0)
            }
        }
    }

    /// A feed signed by the trusted key that lists more than the app takes is refused whole, before
    /// it is stored; one at the limit is taken.
    @Test func aFeedListingMoreEntriesThanTheAppTakesIsRefused() async throws {
        let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!)
        try await proxy.inFrontOfGallery { proxyURL, pipeline in
            let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
            let listed = try await model.loadImages()
            let storedKey = proxyURL.absoluteString + "/gallery/images#verified-by=" + testGalleryKey.fingerprint
            let stored = try #require(await pipeline.storedImage(forKey: storedKey))
            let limit = EmojiArtModel.maxFeedEntries
            proxy.attack(.resign(testGalleryKey) { feed in feed += Array(repeating: feed[1], count: limit + 1 - feed.count) })
            guard let reason = await invalidFeedReason(loading: model) else { return }
            #expect(reason.contains("lists \(limit + 1) entries, more than the \(limit)"), "\(reason)")
            #expect(await model.imageFeed == listed, "the catalog in use stays")
            #expect(await pipeline.storedImage(forKey: storedKey)?.data == stored.data, "and the feed stored")
            proxy.attack(.resign(testGalleryKey) { feed in feed += Array(repeating: feed[1], count: limit - feed.count) })
            #expect(try await model.loadImages().count == limit)
        }
    }

    /// Nor can a gallery send the app elsewhere with a redirect: the app's client follows none, and
    /// each image so sent fails with the redirect's status, fetched from nowhere else.
    @Test func anImageRedirectedElsewhereIsNotFollowed() async throws {
        let elsewhere = TestOrigin()
        try await elsewhere.run { (elsewhereURL) async throws in
            let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!)
            proxy.attack(.redirectImages(to: elsewhereURL.appendingPathComponent("images/internal")))
            try await proxy.inFrontOfGallery { proxyURL, pipeline in
                let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
                await model.loadAndVerify()
                let progress = model.progress.value
                #expect(progress.total > 0 && progress.failed == progress.total, "\(progress)")
                #expect(elsewhere.totalRequests == 0)
                let failure = await #expect(throws: ImagePipeline.Error.self) {
                    try await pipeline.image(for: model.imageRequest(model.imageFeed[0]))
                }
                #expect(failure?.description.contains("302") == true, "\(String(describing: failure))")
            }
        }
    }

    /// Each attack is refused with its own reason; nothing from a refused feed is used, so the
    /// cache holds nothing and no image was fetched.
    @Test(arguments: [
        ("one price changed", "digest_mismatch"),
        ("a checksum and its image replaced", "bad_signature"),
        ("the signature removed", "missing_signature"),
        ("signed by another key", "unknown_key"),
    ])
    func aTamperedFeedIsRefusedWithItsReason(attack: String, reason: String) async throws {
        let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!)
        switch attack {
        case "one price changed": proxy.attack(.changePrice)
        case "a checksum and its image replaced": proxy.attack(.replaceChecksumAndImage(piece: 4))
        case "the signature removed": proxy.attack(.removeSignature)
        default: proxy.attack(.resign(SigningKey()))
        }
        try await withGallery { galleryURL, pipeline in
            proxy.route(to: galleryURL)
            try await proxy.run { proxyURL in
                let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
                let error = await #expect(throws: EmojiArtModel.Error.self) { try await model.loadImages() }
                guard case let .unauthenticatedFeed(_, failure)? = error else {
                    Issue.record("expected unauthenticatedFeed, got \(String(describing: error))")
                    return
                }
                #expect(failure.reason == reason, "\(failure)")
                #expect(model.signatureFailures.value == [reason: 1])
                #expect(model.feedKey.value == nil && model.feedRefusal.value == failure)
                #expect(await model.imageFeed.isEmpty && model.feedByPiece.value.isEmpty)
                await model.loadAndVerify()
                guard case let .failed(message) = model.phase.value else { Issue.record("not failed: \(model.phase.value)"); return }
                #expect(message.contains("could not be authenticated"))
                let stats = await pipeline.stats()
                #expect(stats.originFetches == 0 && stats.diskEntries == 0 && stats.memoryEntries == 0)
                // The page says why, with Retry; /metrics counts the refusals by reason.
                let configuration = AppConfiguration(port: 0, galleryURL: proxyURL, trust: testGalleryTrust)
                let router = try EmojiArtApp.buildRouter(configuration, model: model, pipeline: pipeline)
                try await Application(router: router).test(.router) { client in
                    try await client.execute(uri: "/", method: .get) { response in
                        let html = String(buffer: response.body)
                        #expect(response.status == .badGateway)
                        #expect(html.contains("The gallery&#39;s feed could not be authenticated") && html.contains("action=\"/retry\""))
                    }
                    let metrics = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
                    #expect(metrics.contains(#"emojiart_feed_signature_failures_total{reason="\#(reason)"} 2"#), "\(metrics)")
                }
            }
        }
    }

    /// A refusal is the latest word only until an attempt ends otherwise: after a refused feed,
    /// a gallery that stopped answering is said to be unavailable (503 and its heading), not
    /// to send a feed that is not authentic (before, the older refusal named the page).
    @Test func aRefusalGivesWayToTheNextAttemptsReason() async throws {
        let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!, attack: .removeSignature)
        try await withGallery { galleryURL, pipeline in
            proxy.route(to: galleryURL)
            try await proxy.run { proxyURL in
                let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
                await model.loadAndVerify()
                #expect(model.feedRefusal.value?.reason == "missing_signature")
                // Port 1: nothing answers the proxy's requests for the gallery now (a 502 from it).
                proxy.attack(.none)
                proxy.route(to: URL(string: "http://127.0.0.1:1")!)
                await model.loadAndVerify()
                guard case let .failed(message) = model.phase.value else { Issue.record("not failed: \(model.phase.value)"); return }
                #expect(!message.contains("could not be authenticated"), "\(message)")
                #expect(model.feedRefusal.value == nil)
                let configuration = AppConfiguration(port: 0, galleryURL: proxyURL, trust: testGalleryTrust)
                let router = try EmojiArtApp.buildRouter(configuration, model: model, pipeline: pipeline)
                try await Application(router: router).test(.router) { client in
                    try await client.execute(uri: "/", method: .get) { response in
                        #expect(response.status == .serviceUnavailable)
                        #expect(String(buffer: response.body).contains("The gallery is not answering"))
                    }
                }
            }
        }
    }

    @Test func aReplayedFeedPastItsLifetimeIsRefused() async throws {
        // The gallery's clock says two hours ago: what it sends now is what a replay of a feed
        // recorded then would look like, an hour past its expiry.
        let directory = TemporaryDirectory()
        let configuration = GalleryConfiguration(port: 0, signingKey: testGalleryKey, now: { Date().addingTimeInterval(-7_200) })
        try await withLiveServer({ try await Gallery.buildApplication(configuration, onServerRunning: $0) }) { port in
            let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
            let model = makeModel(URL(string: "http://127.0.0.1:\(port)")!, pipeline)
            let error = await #expect(throws: EmojiArtModel.Error.self) { try await model.loadImages() }
            guard case let .unauthenticatedFeed(_, .expired(expires, now))? = error else {
                Issue.record("expected expired, got \(String(describing: error))")
                return
            }
            #expect(now.timeIntervalSince(expires) > 3_000)
            #expect(error?.description.contains("replayed") == true)
        }
    }

    @Test func aForgedImageFailsVerificationAndIsNeverShown() async throws {
        // The feed is the gallery's, but the image that arrives for piece 4 is not: it fails
        // verification, it is not cached, and the catalog shows a placeholder instead.
        let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!, attack: .replaceImage(piece: 4))
        try await withGallery { galleryURL, pipeline in
            proxy.route(to: galleryURL)
            try await proxy.run { proxyURL in
                let model = makeModel(proxyURL, pipeline, galleryOrigin: proxy.galleryOrigin)
                await model.loadAndVerify()
                let progress = model.progress.value
                #expect(progress.mismatched == 3 && progress.verified == 75)
                #expect(await pipeline.stats().diskEntries == 29, "75 verified entries of 25 pieces, the feed and 3 known-missing pieces")
                let configuration = AppConfiguration(port: 0, galleryURL: proxyURL, trust: testGalleryTrust)
                let router = try EmojiArtApp.buildRouter(configuration, model: model, pipeline: pipeline)
                try await Application(router: router).test(.router) { client in
                    try await client.execute(uri: "/", method: .get) { response in
                        let html = String(buffer: response.body)
                        #expect(!html.contains("src=\"/thumbs/4\""))
                        #expect(html.components(separatedBy: "<span>failed verification</span>").count - 1 == 3)
                        #expect(html.contains("id=\"feed-key\"") && html.contains(testGalleryKey.fingerprint))
                    }
                }
            }
        }
    }

    @Test func trustOnFirstUseRemembersTheKeyAndRefusesAnotherUntilTrusted() async throws {
        let data = TemporaryDirectory("emojiart-trust")
        let store = TrustStore(file: data.url.appendingPathComponent("trusted-galleries.json"))
        let other = SigningKey()
        let directory = TemporaryDirectory()
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory.url, synchronizesWrites: false))
        try await withGallery { galleryURL, _ in
            // The same gallery after it rotated its key: another server, the same public origin.
            let galleryOrigin = galleryURL.originKey
            var rotated = GalleryConfiguration(port: 0, signingKey: other)
            rotated.publicOrigin = galleryOrigin
            try await withLiveServer({ try await Gallery.buildApplication(rotated, onServerRunning: $0) }) { rotatedPort in
                let proxy = TamperingProxy(upstream: galleryURL)
                try await proxy.run { proxyURL in
                    // First contact: the key is learnt and remembered, and said so.
                    let first = EmojiArtModel(galleryURL: proxyURL, pipeline: pipeline, trust: .firstUse(store), galleryOrigin: galleryOrigin)
                    try await first.loadImages()
                    #expect(first.feedKey.value == .init(fingerprint: testGalleryKey.fingerprint, trustedOnFirstUse: true))
                    #expect(try store.key(for: proxyURL)?.thumbprint == testGalleryKey.fingerprint)
                    let again = EmojiArtModel(galleryURL: proxyURL, pipeline: pipeline, trust: .firstUse(store), galleryOrigin: galleryOrigin)
                    try await again.loadImages()
                    #expect(again.feedKey.value?.trustedOnFirstUse == false)

                    // The same URL now answers with another key: refused, naming both keys and the
                    // way out; the stored catalog is shown, marked as not re-authenticated.
                    proxy.route(to: URL(string: "http://127.0.0.1:\(rotatedPort)")!)
                    let refused = EmojiArtModel(
                        galleryURL: proxyURL, pipeline: pipeline, trust: .firstUse(store), galleryOrigin: galleryOrigin, feedCheckInterval: .zero
                    )
                    await refused.loadAndVerify()
                    #expect(refused.phase.value == .ready, "the stored catalog is shown")
                    let failure = SignatureFailure.changedKey(trusted: testGalleryKey.fingerprint, offered: other.fingerprint)
                    guard case .notReauthenticated(failure, _)? = refused.feedOrigin.value else {
                        Issue.record("not refused: \(String(describing: refused.feedOrigin.value))")
                        return
                    }
                    // Its feed has the same ETag: its 304, signed by its key, is refused, and so is
                    // the 200 asked for then.
                    #expect(refused.signatureFailures.value == ["changed_key": 2] && refused.feedRefusal.value == failure)
                    let message = refused.feedOrigin.value?.notReauthenticatedText ?? ""
                    #expect(message.contains(testGalleryKey.fingerprint) && message.contains(other.fingerprint) && message.contains("emojiart trust"))
                    // With nothing stored, the refusal is the whole answer.
                    let emptyDirectory = TemporaryDirectory()
                    let empty = ImagePipeline(configuration: .init(diskDirectory: emptyDirectory.url, synchronizesWrites: false))
                    let nothingStored = EmojiArtModel(galleryURL: proxyURL, pipeline: empty, trust: .firstUse(store), galleryOrigin: galleryOrigin)
                    let error = await #expect(throws: EmojiArtModel.Error.self) { try await nothingStored.loadImages() }
                    #expect(error == .unauthenticatedFeed(url: proxyURL.absoluteString + "/gallery/images", failure: failure))

                    // Trusting the new key (what `emojiart trust` does) lets it through.
                    try store.trust(try await GalleryKeys.published(by: proxyURL), for: proxyURL)
                    let trusted = EmojiArtModel(galleryURL: proxyURL, pipeline: pipeline, trust: .firstUse(store), galleryOrigin: galleryOrigin)
                    #expect(try await trusted.loadImages().count == 87)
                    #expect(trusted.feedKey.value?.fingerprint == other.fingerprint)
                    // The app that was refused, asking again: the same feed, now under the new key,
                    // which the page names (it named the old one until the feed itself changed).
                    #expect(refused.feedKey.value?.fingerprint == testGalleryKey.fingerprint)
                    #expect(await refused.refreshIfFeedChanged() == false, "the same feed: nothing to verify again")
                    if case .notReauthenticated? = refused.feedOrigin.value {
                        Issue.record("still refused: \(String(describing: refused.feedOrigin.value))")
                    }
                    #expect(refused.feedKey.value?.fingerprint == other.fingerprint)
                    #expect(refused.feedRefusal.value == nil)
                }
            }
        }
    }

    @Test func aPinnedKeyRefusesAnyOther() async throws {
        try await withGallery { galleryURL, pipeline in
            let pinned = SigningKey().fingerprint
            let model = EmojiArtModel(galleryURL: galleryURL, pipeline: pipeline, trust: .pinned(fingerprint: pinned))
            let error = await #expect(throws: EmojiArtModel.Error.self) { try await model.loadImages() }
            guard case let .unauthenticatedFeed(_, .unknownKey(expected, offered))? = error else {
                Issue.record("expected unknownKey, got \(String(describing: error))")
                return
            }
            #expect(expected == pinned && offered == testGalleryKey.fingerprint)
        }
    }

    @Test func theSigningKeyFileIsPrivateAndReusedAcrossStarts() throws {
        let data = TemporaryDirectory("emojiart-key")
        let path = data.url.appendingPathComponent("emojiart/gallery-signing.key")
        let (key, created) = try SigningKeyFile.readOrCreate(path)
        #expect(created)
        let attributes = try FileManager.default.attributesOfItem(atPath: path.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let text = try String(contentsOf: path, encoding: .utf8)
        #expect(Data(base64Encoded: text.trimmingCharacters(in: .newlines))?.count == 32)
        let (again, createdAgain) = try SigningKeyFile.readOrCreate(path)
        #expect(!createdAgain && again.fingerprint == key.fingerprint)

        try Data("not a key\n".utf8).write(to: path)
        #expect(throws: SigningKeyFile.Error.self) { try SigningKeyFile.readOrCreate(path) }
    }

    /// Loads `model`'s feed again, which must be refused as invalid: the reason it gives.
    func invalidFeedReason(loading model: EmojiArtModel, sourceLocation: SourceLocation = #_sourceLocation) async -> String? {
        let error = await #expect(throws: EmojiArtModel.Error.self, sourceLocation: sourceLocation) { try await model.loadImages() }
        guard case let .invalidFeed(_, reason)? = error else {
            Issue.record("expected invalidFeed, got \(String(describing: error))", sourceLocation: sourceLocation)
            return nil
        }
        return reason
    }
}
