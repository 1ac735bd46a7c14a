import EmojiArtApp
import Foundation
import GalleryFeed
import GalleryServer
import HTTPCaching
import ImageCache
import MessageSignatures
import Testing
import TestSupport

/// Issue 48, part 1 (TUF's rule): nothing is stored until every check passes. Before, a feed
/// signed by the trusted key that listed an image at another origin was refused, but the trust
/// file already held its identity as the newest accepted feed (and its signature, and its
/// `validUntil`): the good stored catalog then counted as superseded and `sync --offline` exited 1.
/// Now a refusal, whatever its reason, leaves the trust file and the stored feed byte for byte as
/// they were, and the stored catalog is still the one shown offline. A real gallery on
/// 127.0.0.1:0 and a real proxy between, as an attacker (or a hostile gallery) runs them.
@Suite(.timeLimit(.minutes(5))) struct RefusalLeavesNothingTests {
    let cache = TemporaryDirectory()

    /// Every way a feed answer is refused, and the reason it is refused with (`invalid_feed`: not
    /// a signature failure, the feed's entries).
    static let refusals: [(String, String)] = [
        ("an image at another origin", "invalid_feed"),
        ("more entries than the app takes", "invalid_feed"),
        ("not a feed at all", "invalid_feed"),
        ("one price changed", "digest_mismatch"),
        ("a checksum and its image replaced", "bad_signature"),
        ("the signature removed", "missing_signature"),
        ("signed by another key", "unknown_key"),
        ("the gallery's first answer replayed", "replayed"),
        ("signed before the newest accepted", "replayed"),
        ("signed two hours ago", "expired"),
        ("signed for another gallery", "wrong_gallery"),
        ("an unsigned 304", "missing_signature"),
        ("a 304 for another ETag", "etag_mismatch"),
        ("a 304 signed by another key", "unknown_key"),
    ]

    @Test(arguments: refusals)
    func aRefusedFeedChangesNothingStored(refusal: String, reason: String) async throws {
        let trust = testGalleryTrust
        let trustFile = trust.store.file
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false))
        let galleryConfiguration = GalleryConfiguration(port: 0, signingKey: testGalleryKey, revisionInterval: .zero)
        try await withLiveServer({ try await Gallery.buildApplication(galleryConfiguration, onServerRunning: $0) }) { port in
            let galleryURL = URL(string: "http://127.0.0.1:\(port)")!
            let proxy = TamperingProxy(upstream: galleryURL)
            try await proxy.run { proxyURL in
                let model = EmojiArtModel(galleryURL: proxyURL, pipeline: pipeline, trust: trust, galleryOrigin: proxy.galleryOrigin)
                let accepted = try await model.loadImages()
                let feedKey = proxyURL.absoluteString + "/gallery/images#verified-by=" + testGalleryKey.fingerprint
                let storedFeed = try #require(await pipeline.storedImage(forKey: feedKey))
                let trustBytes = try Data(contentsOf: trustFile)
                // A new edition, so that what the attack serves is a feed this machine never saw.
                try await BoundFeedTests.revise(galleryURL)

                let failure = try await Self.refuse(refusal, model: model, proxy: proxy, gallery: galleryURL)
                #expect(failure == reason, "\(refusal)")
                #expect(try Data(contentsOf: trustFile) == trustBytes, "\(refusal): the trust file is byte for byte as it was")
                #expect(await pipeline.storedImage(forKey: feedKey) == storedFeed, "\(refusal): and so is the stored feed")
                #expect(await model.imageFeed == accepted, "\(refusal): the catalog in use stays")

                // `sync --offline`, as the issue ran it: the stored catalog is the newest accepted.
                let offline = EmojiArtModel(
                    galleryURL: proxyURL, pipeline: pipeline, trust: trust, offline: true, galleryOrigin: proxy.galleryOrigin
                )
                #expect(try await offline.loadImages() == accepted, "\(refusal): still shown offline")
                #expect(offline.signatureFailures.value.isEmpty)
            }
        }
    }

    /// At first contact (no pin, nothing remembered), a feed signed by the gallery's own key but
    /// refused for its entries trusts no key: the trust file is not even made, and the next,
    /// valid answer is the first contact.
    @Test func aFeedRefusedAtFirstContactTrustsNoKey() async throws {
        let store = testTrustStore()
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: cache.url, synchronizesWrites: false))
        let proxy = TamperingProxy(upstream: URL(string: "http://127.0.0.1:1")!)
        proxy.attack(.resign(testGalleryKey) { $0[1].url = "http://127.0.0.1:9/gallery/image?1" })
        try await withGallery { galleryURL, _ in
            proxy.route(to: galleryURL)
            try await proxy.run { (proxyURL) async throws in
                let model = EmojiArtModel(galleryURL: proxyURL, pipeline: pipeline, trust: .firstUse(store), galleryOrigin: proxy.galleryOrigin)
                let error = await #expect(throws: EmojiArtModel.Error.self) { try await model.loadImages() }
                guard case .invalidFeed? = error else { Issue.record("expected invalidFeed, got \(String(describing: error))"); return }
                #expect(!FileManager.default.fileExists(atPath: store.file.path), "nothing written")
                #expect(try store.key(for: proxyURL) == nil)
                #expect(await pipeline.storedImage(forKey: proxyURL.absoluteString + "/gallery/images#verified-by=" + testGalleryKey.fingerprint) == nil)

                proxy.attack(.none)
                #expect(try await model.loadImages().count == 87)
                #expect(model.feedKey.value == .init(fingerprint: testGalleryKey.fingerprint, trustedOnFirstUse: true))
                #expect(try store.key(for: proxyURL)?.thumbprint == testGalleryKey.fingerprint)
            }
        }
    }

    /// Has `proxy` (in front of the gallery at `gallery`, with `model` behind) answer the next
    /// feed request as `refusal` says, loads the feed, and gives the reason it was refused for.
    static func refuse(_ refusal: String, model: EmojiArtModel, proxy: TamperingProxy, gallery: URL) async throws -> String? {
        let elsewhere = "http://127.0.0.1:9/gallery/image?1"
        switch refusal {
        case "an image at another origin": proxy.attack(.resign(testGalleryKey) { $0[1].url = elsewhere })
        case "more entries than the app takes":
            proxy.attack(.resign(testGalleryKey) { feed in feed += Array(repeating: feed[1], count: EmojiArtModel.maxFeedEntries + 1 - feed.count) })
        case "not a feed at all": proxy.attack(.resignBody(testGalleryKey, body: Array(#"{"not": "a feed"}"#.utf8)))
        case "one price changed": proxy.attack(.changePrice)
        case "a checksum and its image replaced": proxy.attack(.replaceChecksumAndImage(piece: 4))
        case "the signature removed": proxy.attack(.removeSignature)
        case "signed by another key": proxy.attack(.resign(SigningKey()))
        case "the gallery's first answer replayed": proxy.attack(.replayFirstFeed)
        case "an unsigned 304": proxy.attack(.notModifiedUnsigned)
        case "a 304 for another ETag": proxy.attack(.notModifiedSigned(by: testGalleryKey, etag: "\"another\""))
        case "a 304 signed by another key": proxy.attack(.notModifiedSigned(by: SigningKey()))
        case "signed before the newest accepted", "signed two hours ago", "signed for another gallery":
            // Another gallery with the same key: its clock behind, or its own origin.
            let behind: TimeInterval = refusal == "signed two hours ago" ? -7_200 : refusal == "signed before the newest accepted" ? -600 : 0
            var other = GalleryConfiguration(port: 0, signingKey: testGalleryKey, now: { Date().addingTimeInterval(behind) })
            if behind != 0 { other.publicOrigin = gallery.originKey }
            return try await withLiveServer({ try await Gallery.buildApplication(other, onServerRunning: $0) }) { port in
                proxy.route(to: URL(string: "http://127.0.0.1:\(port)")!)
                defer { proxy.route(to: gallery) }
                return try await loadRefused(model)
            }
        default: Issue.record("no such refusal: \(refusal)")
        }
        defer { proxy.attack(.none) }
        return try await loadRefused(model)
    }

    /// Loads `model`'s feed, which must be refused: `invalid_feed` for its entries, or the
    /// signature failure the stored catalog is then shown under.
    static func loadRefused(_ model: EmojiArtModel) async throws -> String? {
        do {
            _ = try await model.loadImages()
        } catch let EmojiArtModel.Error.invalidFeed(_, reason) {
            #expect(!reason.isEmpty)
            return "invalid_feed"
        }
        guard case let .notReauthenticated(failure, _)? = model.feedOrigin.value else {
            Issue.record("taken: \(String(describing: model.feedOrigin.value))")
            return nil
        }
        return failure.reason
    }
}

extension RefusalLeavesNothingTests {
    /// The trust file's one write for an accepted answer (`TrustStore.accept`): a first-use key
    /// lost to one stored meanwhile, or a signature older than the newest, writes nothing at all,
    /// not even the parts that would have passed.
    @Test func theTrustFilesOneWriteIsAllOrNothing() throws {
        let store = testTrustStore()
        let gallery = URL(string: "http://127.0.0.1:8090")!
        let (trusted, other) = (SigningKey().publicJWK, SigningKey().publicJWK)
        let newest = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(try store.accept(.init(
            created: newest, fingerprint: trusted.thumbprint, origin: gallery.originKey, feedDigest: "a", firstUse: (trusted, gallery)
        )) == .accepted)
        let written = try Data(contentsOf: store.file)
        #expect(try store.accept(.init(
            created: newest.addingTimeInterval(10), fingerprint: other.thumbprint, origin: gallery.originKey, feedDigest: "b",
            firstUse: (other, gallery)
        )) == .keyChanged(trusted: trusted))
        #expect(try store.accept(.init(
            created: newest.addingTimeInterval(-61), fingerprint: trusted.thumbprint, origin: gallery.originKey, feedDigest: "c"
        )) == .replayed(newest: newest))
        #expect(try Data(contentsOf: store.file) == written, "byte for byte")
        #expect(try store.standing(ofFeed: "a", of: trusted.thumbprint, origin: gallery.originKey) == .newest(validUntil: nil))
    }
}
