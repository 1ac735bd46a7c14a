import EmojiArtApp
import Foundation
import HTTPCaching
import ImageCache
import MessageSignatures
import Testing
import TestSupport

/// The trust file fails closed: what cannot be read is an error naming the file (never an empty
/// store, never rewritten), first use never overwrites a key stored meanwhile, and its lock is
/// not taken through a link. Real files in a temporary directory.
///
/// Tests run as root, to whom a mode-0600 file of another user is readable: "a read error other
/// than no such file" is caused for real with the trust file's path being a directory (and a
/// FIFO, which must not block the read).
@Suite(.timeLimit(.minutes(3))) struct TrustStoreTests {
    let data = TemporaryDirectory("emojiart-trust")
    var file: URL { data.url.appendingPathComponent("trusted-galleries.json") }
    let gallery = URL(string: "http://127.0.0.1:8090")!

    @Test func aTrustFileThatCannotBeReadIsAnErrorNamingItNeverAnEmptyStore() throws {
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: true)
        let store = TrustStore(file: file)
        let error = #expect(throws: TrustStore.Failure.self) { try store.key(for: gallery) }
        #expect(error?.description.contains(file.path) == true && error?.description.contains("move it away") == true, "\(String(describing: error))")
        #expect(throws: TrustStore.Failure.self) { try store.trustOnFirstUse(SigningKey().publicJWK, for: gallery) }
        #expect(throws: TrustStore.Failure.self) { try store.acceptSignature(created: Date(), of: "any", origin: "http://127.0.0.1:8090") }
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory) && isDirectory.boolValue, "left as it was")
    }

    /// Whoever may write the trust file, or its directory, decides which keys are trusted: a
    /// file of another user, or one group or others may write, naming another key, was obeyed
    /// (attacker round 4). Each is refused and left as it is.
    @Test func aTrustFileOrDirectoryOthersMayWriteIsRefused() throws {
        let store = TrustStore(file: file)
        _ = try store.trustOnFirstUse(SigningKey().publicJWK, for: gallery)
        #expect(chmod(file.path, 0o666) == 0)
        var error = #expect(throws: TrustStore.Failure.self) { try store.key(for: gallery) }
        #expect(error?.description.contains("mode 666") == true, "\(String(describing: error))")
        #expect(chmod(file.path, 0o600) == 0 && chown(file.path, 65534, 65534) == 0)
        error = #expect(throws: TrustStore.Failure.self) { try store.key(for: gallery) }
        #expect(error?.description.contains("owned by user 65534") == true, "\(String(describing: error))")
        #expect(chown(file.path, 0, 0) == 0)
        #expect(try store.key(for: gallery) != nil)
        #expect(chmod(data.url.path, 0o777) == 0)
        error = #expect(throws: TrustStore.Failure.self) { try store.key(for: gallery) }
        #expect(error?.description.contains("is not private") == true, "\(String(describing: error))")
    }

    @Test func aFIFOAtTheTrustPathIsAnErrorAndDoesNotBlock() throws {
        #expect(mkfifo(file.path, 0o600) == 0)
        let error = #expect(throws: TrustStore.Failure.self) { try TrustStore(file: file).key(for: gallery) }
        #expect(error?.description.contains("not a regular file") == true)
    }

    @Test func theAppRefusesTheFeedWhenItsTrustFileCannotBeRead() async throws {
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: true)
        try await withGallery { galleryURL, pipeline in
            let model = EmojiArtModel(galleryURL: galleryURL, pipeline: pipeline, trust: .firstUse(TrustStore(file: file)))
            let error = await #expect(throws: EmojiArtModel.Error.self) { try await model.loadImages() }
            guard case let .unauthenticatedFeed(_, .trustStore(detail))? = error else {
                Issue.record("expected a trust store failure, got \(String(describing: error))")
                return
            }
            #expect(detail.contains(file.path) && detail.contains("is not a regular file"), "\(detail)")
            #expect(model.feedKey.value == nil && model.signatureFailures.value == ["trust_store": 1])
        }
    }

    @Test func firstUseDoesNotOverwriteAKeyTrustedMeanwhile() async throws {
        let store = TrustStore(file: file)
        let chosen = SigningKey().publicJWK
        try await withGallery { galleryURL, pipeline in
            // While the app fetches the gallery's key on first contact, `emojiart trust --key=...`
            // stores another one for the same gallery.
            let proxy = TamperingProxy(upstream: galleryURL)
            try await proxy.run { proxyURL in
                proxy.attack(.beforeKey { try store.trust(chosen, for: proxyURL) })
                let model = EmojiArtModel(galleryURL: proxyURL, pipeline: pipeline, trust: .firstUse(store), galleryOrigin: proxy.galleryOrigin)
                let error = await #expect(throws: EmojiArtModel.Error.self) { try await model.loadImages() }
                guard case let .unauthenticatedFeed(_, .changedKey(trusted, offered))? = error else {
                    Issue.record("expected changedKey, got \(String(describing: error))")
                    return
                }
                #expect(trusted == chosen.thumbprint && offered == testGalleryKey.fingerprint)
                let kept = try store.key(for: proxyURL)
                #expect(kept == chosen, "the key trusted meanwhile stays")
            }
        }
        // At the store: compare-and-set keeps what is there.
        let other = TrustStore(file: data.url.appendingPathComponent("other.json"))
        let first = SigningKey().publicJWK
        #expect(try other.trustOnFirstUse(first, for: gallery) == first)
        #expect(try other.trustOnFirstUse(SigningKey().publicJWK, for: gallery) == first)
    }

    @Test func theLockIsNotTakenThroughALink() throws {
        let target = data.url.appendingPathComponent("elsewhere")
        try FileManager.default.createSymbolicLink(atPath: file.path + ".lock", withDestinationPath: target.path)
        let error = #expect(throws: TrustStore.Failure.self) { try TrustStore(file: file).key(for: gallery) }
        #expect(error?.description.contains(".lock") == true)
        #expect(!FileManager.default.fileExists(atPath: target.path), "nothing created through the link")
    }

    @Test func aTrustFileOfTheFirstFormatIsReadAndKeptWhenRewritten() throws {
        let key = SigningKey().publicJWK
        let old = try JSONEncoder().encode(["http://127.0.0.1:8090": key, "http://127.0.0.1:9000": SigningKey().publicJWK])
        try old.write(to: file)
        let store = TrustStore(file: file)
        #expect(try store.key(for: gallery) == key)
        #expect(try store.acceptSignature(created: Date(timeIntervalSince1970: 1_800_000_000), of: key.thumbprint, origin: gallery.originKey) == nil)
        #expect(try store.key(for: URL(string: "http://127.0.0.1:9000")!) != nil, "the other gallery's pin stays")
        #expect(try store.newestSignature(of: key.thumbprint, origin: gallery.originKey) == Date(timeIntervalSince1970: 1_800_000_000))
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// Builds before 2026-11-26 keyed an IPv6 gallery without brackets (`http://::1:8080`); its
    /// key is still the one trusted, so first use does not take another gallery's key in its place.
    /// Both formats such builds wrote: the first (the galleries alone) and the current one.
    @Test(arguments: [false, true]) func anIPv6GalleryTrustedUnderTheOldKeyIsStillTrusted(currentFormat: Bool) throws {
        let key = SigningKey().publicJWK
        let other = SigningKey().publicJWK
        let galleries = ["http://::1:8080": key, "http://127.0.0.1:9000": other]
        if currentFormat {
            struct Written: Encodable {
                let galleries: [String: JSONWebKey]
                let newestSignatures: [String: Int64]
                let acceptedFeeds: [String: [String]]
            }
            try JSONEncoder().encode(Written(galleries: galleries, newestSignatures: [:], acceptedFeeds: [:])).write(to: file)
        } else {
            try JSONEncoder().encode(galleries).write(to: file)
        }
        let store = TrustStore(file: file)
        let gallery = try #require(URL(string: "http://[::1]:8080/"))
        #expect(try store.key(for: gallery) == key)
        #expect(try store.trustOnFirstUse(SigningKey().publicJWK, for: gallery) == key, "first use keeps the old key")
        #expect(try store.key(for: URL(string: "http://127.0.0.1:9000")!) == other)
    }

    /// The replay floor is kept per gallery origin and key: one key signing for two galleries
    /// (every gallery a user starts without `--signing-key` shares the user's) has two floors.
    @Test func theNewestSignatureOnlyMovesForwardAndAnOlderOneBeyondTheSkewIsRefused() throws {
        let store = TrustStore(file: file)
        let (a, b) = ("http://127.0.0.1:8090", "http://127.0.0.1:8091")
        let newest = Date(timeIntervalSince1970: 1_800_000_600)
        #expect(try store.acceptSignature(created: newest, of: "k", origin: a) == nil)
        #expect(try store.acceptSignature(created: newest.addingTimeInterval(-60), of: "k", origin: a) == nil, "within the skew")
        #expect(try store.acceptSignature(created: newest.addingTimeInterval(-61), of: "k", origin: a) == newest)
        #expect(try store.acceptSignature(created: newest.addingTimeInterval(-600), of: "other key", origin: a) == nil, "per key")
        #expect(try store.acceptSignature(created: newest.addingTimeInterval(-600), of: "k", origin: b) == nil, "per origin")
        #expect(try store.newestSignature(of: "k", origin: a) == newest)
        #expect(try store.newestSignature(of: "k", origin: "HTTP://127.0.0.1:8090") == newest, "an origin's case does not matter")
    }
    /// A feed signed before the newest accepted, held back on the way and delivered within the
    /// skew, is accepted but does not become the newest: an offline start still shows the newer
    /// one, whose signature dates the prices.
    @Test func aFeedSignedBeforeTheNewestNeverBecomesTheNewest() throws {
        let store = TrustStore(file: file)
        let origin = gallery.originKey
        let (r1, r2) = (SHA256Hex.digest([1]), SHA256Hex.digest([2]))
        let newest = Date(timeIntervalSince1970: 1_800_000_600)
        let until = newest.addingTimeInterval(3_600)
        #expect(try store.acceptSignature(created: newest, of: "k", origin: origin, feedDigest: r2, validUntil: until) == nil)
        #expect(try store.acceptSignature(
            created: newest.addingTimeInterval(-14), of: "k", origin: origin, feedDigest: r1, validUntil: newest.addingTimeInterval(3_586)
        ) == nil, "within the skew")
        #expect(try store.standing(ofFeed: r2, of: "k", origin: origin) == .newest(validUntil: until))
        #expect(try store.standing(ofFeed: r1, of: "k", origin: origin) == .earlier)
        #expect(try store.newestSignature(of: "k", origin: origin) == newest)
    }

    /// Issue 25: the trust file written before accepted feeds were recorded (keys and newest
    /// signatures only) still reads, and gains the record at the next accepted feed. Issue 40:
    /// its floor, kept by key alone, still holds for every origin signing with that key.
    @Test func aTrustFileWithoutAcceptedFeedsIsReadAndGainsThem() throws {
        let key = SigningKey().publicJWK
        let old = #"{"galleries":{"\#(gallery.absoluteString)":\#(String(decoding: try JSONEncoder().encode(key), as: UTF8.self))},"newestSignatures":{"\#(key.thumbprint)":1800000000}}"#
        try Data(old.utf8).write(to: file)
        let store = TrustStore(file: file)
        let origin = gallery.originKey
        #expect(try store.key(for: self.gallery) == key)
        #expect(try store.newestSignature(of: key.thumbprint, origin: origin) == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(try store.newestSignature(of: key.thumbprint, origin: "http://127.0.0.1:1") == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(try store.acceptSignature(created: Date(timeIntervalSince1970: 1_799_000_000), of: key.thumbprint, origin: "http://127.0.0.1:1") != nil)
        #expect(try store.acceptedFeed(SHA256Hex.digest([1]), of: key.thumbprint, origin: origin) == false, "nothing recorded yet")

        #expect(try store.acceptSignature(created: Date(timeIntervalSince1970: 1_800_000_000), of: key.thumbprint, origin: origin, feedDigest: SHA256Hex.digest([1])) == nil)
        #expect(try store.acceptedFeed(SHA256Hex.digest([1]), of: key.thumbprint, origin: origin))
        #expect(try store.acceptedFeed(SHA256Hex.digest([1]), of: "another key", origin: origin) == false, "per key")
        #expect(try store.acceptedFeed(SHA256Hex.digest([1]), of: key.thumbprint, origin: "http://127.0.0.1:1") == false, "per origin")
        #expect(try store.key(for: self.gallery) == key, "the key stays")
    }

    /// A file written before issue 40 recorded accepted feeds by key alone: they are kept as
    /// they were but not taken as any origin's, so a feed stored then is fetched again once.
    @Test func feedsAcceptedByKeyAloneAreNotTakenAsAnyOrigins() throws {
        let key = SigningKey().publicJWK
        let digest = SHA256Hex.digest([7])
        let old = #"{"galleries":{},"newestSignatures":{"\#(key.thumbprint)":1800000000},"acceptedFeeds":{"\#(key.thumbprint)":["\#(digest)"]}}"#
        try Data(old.utf8).write(to: file)
        let store = TrustStore(file: file)
        #expect(try store.standing(ofFeed: digest, of: key.thumbprint, origin: gallery.originKey) == .unknown)
        #expect(try store.acceptSignature(created: Date(timeIntervalSince1970: 1_800_000_001), of: key.thumbprint, origin: gallery.originKey, feedDigest: digest) == nil)
        let written = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        #expect((written["acceptedFeeds"] as? [String: [String]])?[key.thumbprint] == [digest], "kept as read")
        #expect(written["feeds"] != nil)
    }

    @Test func theLastAcceptedFeedsAreKeptNewestLastAndARefusedOneIsNotRecorded() throws {
        let store = TrustStore(file: file)
        let origin = gallery.originKey
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let limit = TrustStore.acceptedFeedLimit
        for index in 0...limit {
            let digest = SHA256Hex.digest([UInt8(index)])
            #expect(try store.acceptSignature(
                created: start.addingTimeInterval(Double(index)), of: "k", origin: origin, feedDigest: digest,
                validUntil: start.addingTimeInterval(3600)
            ) == nil)
        }
        #expect(try store.acceptedFeed(SHA256Hex.digest([0]), of: "k", origin: origin) == false, "the oldest is dropped past \(limit)")
        #expect(try (1...limit).allSatisfy { try store.acceptedFeed(SHA256Hex.digest([UInt8($0)]), of: "k", origin: origin) })
        // Only the last is the newest, with the end of its prices' validity; the others are earlier.
        #expect(try store.standing(ofFeed: SHA256Hex.digest([UInt8(limit)]), of: "k", origin: origin) == .newest(validUntil: start.addingTimeInterval(3600)))
        #expect(try store.standing(ofFeed: SHA256Hex.digest([1]), of: "k", origin: origin) == .earlier)
        // A replayed signature is refused, and its body is not recorded.
        let replayed = SHA256Hex.digest([0xFF])
        #expect(try store.acceptSignature(created: start.addingTimeInterval(-3600), of: "k", origin: origin, feedDigest: replayed) != nil)
        #expect(try store.acceptedFeed(replayed, of: "k", origin: origin) == false)
    }
}
