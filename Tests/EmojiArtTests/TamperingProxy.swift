import AsyncHTTPClient
import Crypto
import EmojiArtApp
import Foundation
import HTTPCaching
import HTTPTypes
import Hummingbird
import ImageCache
import MessageSignatures
import NIOCore
import NIOHTTP1
import Synchronization
import TestSupport
import GalleryFeed

/// A real HTTP proxy on 127.0.0.1 in front of a gallery that alters what passes through, as a
/// hostile network would: the attacks the feed's signature must stop.
final class TamperingProxy: Sendable {
    enum Attack: Sendable {
        /// Passes everything through untouched.
        case none
        /// Changes one price in the feed and leaves the signed headers as they were.
        case changePrice
        /// Replaces one piece's checksum in the feed and serves other bytes as its image, and
        /// recomputes `Content-Digest` so the digest matches the altered feed.
        case replaceChecksumAndImage(piece: Int)
        /// Serves other bytes as one piece's image; the feed passes untouched.
        case replaceImage(piece: Int)
        /// Drops `Signature` and `Signature-Input`.
        case removeSignature
        /// Alters the feed with `edit` (by default, one price) and signs it anew with `key`: with
        /// the gallery's own key, a hostile gallery.
        case resign(SigningKey, edit: @Sendable (inout [ImageFile]) -> Void = { $0[0].price = 5 })
        /// Serves `body` as the feed, whatever it is, signed anew with `key`: a hostile gallery
        /// whose feed is not one.
        case resignBody(SigningKey, body: [UInt8])
        /// Answers every feed request `304 Not Modified`, unsigned, with the `ETag` asked for.
        case notModifiedUnsigned
        /// Answers every feed request `304 Not Modified` with the `ETag` asked for (or `etag`),
        /// signed by `key` as a gallery signs one, for the request (its nonce) and the gallery
        /// behind: a hostile gallery, with its own key.
        case notModifiedSigned(by: SigningKey, etag: String? = nil)
        /// Passes everything through but drops the signature of the feed's 304s: a gallery from
        /// before 304s were signed.
        case unsignedNotModifiedThrough
        /// Answers the feed with the feed answer (a 200) it passed on first: an older, validly
        /// signed feed replayed.
        case replayFirstFeed
        /// Passes everything through, and adds its own ed25519 signature under another label
        /// before the gallery's, as a signing proxy would.
        case addOwnSignatureFirst(SigningKey)
        /// Answers every image request with a redirect (302) to `target`.
        case redirectImages(to: URL)
        /// Passes everything through, and runs `action` when the gallery's key is asked for:
        /// something another process does at that very moment.
        case beforeKey(@Sendable () throws -> Void)
        /// Passes everything through, each feed request once `gate` opens.
        case holdFeed(Gate)
        /// Answers a conditional feed request with the last signed 304 the gallery gave, and
        /// any other with the last signed 200, as they were recorded: genuine answers replayed.
        case replayRecorded
        /// Passes everything through, and sets the feed answers' `Cache-Control` to `value`
        /// (`no-store`, a long `max-age`): a field the signature does not cover.
        case feedCacheControl(String)
    }

    /// Feed requests received.
    var feedRequests: Int { feedRequestCount.withLock { $0 } }
    private let feedRequestCount = Mutex(0)

    /// The bytes served instead of a replaced image.
    /// Begins as a PNG (a forger sends an image: bytes that are none are refused before their
    /// digest is even asked), and is not the gallery's art.
    static let forgedImage: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array("not the gallery's art".utf8)

    private let state: Mutex<(upstream: URL, attack: Attack)>
    /// Every feed 200 passed on, as it was: status, fields and body.
    private let recordedFeeds = Mutex<[(headers: HTTPHeaders, body: [UInt8])]>([])
    /// The fields of every feed 304 passed on, as they were.
    private let recordedNotModified = Mutex<[HTTPHeaders]>([])

    /// Signed feed answers recorded so far: 200s and 304s.
    var recorded: (feeds: Int, notModified: Int) {
        (recordedFeeds.withLock { $0.count }, recordedNotModified.withLock { $0.count })
    }

    /// The origin of the gallery behind: what an app that knows it is asking through this proxy
    /// passes as its gallery's origin (`--gallery-origin`).
    var galleryOrigin: String { state.withLock { $0.upstream.originKey } }

    init(upstream: URL, attack: Attack = .none) {
        state = Mutex((upstream, attack))
    }

    /// Sends requests to another gallery from now on.
    func route(to upstream: URL) { state.withLock { $0.upstream = upstream } }

    /// Changes the attack.
    func attack(_ attack: Attack) { state.withLock { $0.attack = attack } }

    /// Runs a real gallery (``withGallery``) and this proxy in front of it until `body` returns;
    /// `body` gets the proxy's base URL, the gallery an app is given, and the cache.
    func inFrontOfGallery<T: Sendable>(_ body: (_ proxyURL: URL, _ pipeline: ImagePipeline) async throws -> T) async throws -> T {
        try await withGallery { galleryURL, pipeline in
            route(to: galleryURL)
            return try await run { proxyURL in try await body(proxyURL, pipeline) }
        }
    }

    /// Runs the proxy until `body` returns; `body` gets its base URL.
    func run<T: Sendable>(_ body: (URL) async throws -> T) async throws -> T {
        let router = Router()
        router.get("**") { request, _ -> Response in try await self.forward(request) }
        return try await withLiveServer({ onRunning in
            Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await onRunning($0.localAddress?.port ?? 0) }
            )
        }) { port in try await body(URL(string: "http://127.0.0.1:\(port)")!) }
    }

    private func forward(_ request: Request) async throws -> Response {
        let (upstream, attack) = state.withLock { ($0.upstream, $0.attack) }
        let isFeed = request.uri.path == "/gallery/images"
        if isFeed { feedRequestCount.withLock { $0 += 1 } }
        let asked = request.headers[.ifNoneMatch]
        let nonce = request.headers[Self.nonceField]
        switch attack {
        case .notModifiedUnsigned where isFeed:
            return Response(status: .notModified, headers: [.eTag: asked ?? "\"forged\"", .cacheControl: "no-cache"])
        case let .notModifiedSigned(key, etag) where isFeed:
            var fields: HTTPFields = [
                .eTag: etag ?? asked ?? "\"forged\"", .cacheControl: "no-cache", Self.originField: upstream.originKey,
            ]
            let signed = fields
            let signature = try MessageSignature.sign(
                status: 304, field: { name in HTTPField.Name(name).flatMap { signed[$0] } },
                requestField: { $0 == FeedNonce.field ? nonce : nil }, key: key, keyID: key.fingerprint,
                created: Date(), expires: Date().addingTimeInterval(3600)
            )
            fields[HTTPField.Name("Signature-Input")!] = signature.signatureInput
            fields[HTTPField.Name("Signature")!] = signature.signature
            return Response(status: .notModified, headers: fields)
        case let .beforeKey(action) where request.uri.path == "/gallery/key":
            try action()
        case let .holdFeed(gate) where isFeed:
            try await gate.pass()
        case let .redirectImages(target) where request.uri.path == "/gallery/image":
            return Response(status: .found, headers: [.location: target.absoluteString, .contentLength: "0"])
        case .replayFirstFeed where isFeed:
            if let first = recordedFeeds.withLock({ $0.first }) { return Self.response(status: 200, headers: first.headers, body: first.body) }
        case .replayRecorded where isFeed && asked != nil:
            if let last = recordedNotModified.withLock({ $0.last }) { return Self.response(status: 304, headers: last, body: []) }
        case .replayRecorded where isFeed:
            if let last = recordedFeeds.withLock({ $0.last }) { return Self.response(status: 200, headers: last.headers, body: last.body) }
        default:
            break
        }
        var upstreamRequest = HTTPClientRequest(url: upstream.absoluteString + request.uri.string)
        // The app's nonce passes on, as any proxy passes a request's fields.
        if let nonce { upstreamRequest.headers.add(name: "EmojiArt-Feed-Nonce", value: nonce) }
        // Conditionals pass on, so the gallery answers 304s through the proxy; not for the
        // attacks on a feed's body, which need the whole feed to alter.
        let altersBodies = switch attack {
        case .changePrice, .replaceChecksumAndImage, .removeSignature, .resign, .resignBody: true
        default: false
        }
        if !altersBodies {
            if let asked { upstreamRequest.headers.add(name: "If-None-Match", value: asked) }
            if let since = request.headers[.ifModifiedSince] { upstreamRequest.headers.add(name: "If-Modified-Since", value: since) }
        }
        let response = try await HTTPClient.shared.execute(upstreamRequest, timeout: .seconds(30))
        var body = [UInt8](buffer: try await response.body.collect(upTo: 8 * 1024 * 1024))
        var headers = response.headers
        if isFeed, response.status == .ok { recordedFeeds.withLock { $0.append((headers, body)) } }
        if isFeed, response.status == .notModified { recordedNotModified.withLock { $0.append(headers) } }
        switch attack {
        case let .feedCacheControl(value) where isFeed:
            headers.replaceOrAdd(name: "Cache-Control", value: value)
        case .unsignedNotModifiedThrough where isFeed && response.status == .notModified:
            headers.remove(name: "Signature")
            headers.remove(name: "Signature-Input")
        case let .addOwnSignatureFirst(key) where isFeed:
            let fields = headers
            let own = try MessageSignature.sign(
                status: Int(response.status.code), field: { fields[$0].first }, key: key, keyID: key.fingerprint,
                created: Date(), expires: Date().addingTimeInterval(3600), label: "proxy"
            )
            // A field line of its own, first: the app joins the lines into one dictionary.
            let inputs = headers["Signature-Input"], signatures = headers["Signature"]
            headers.remove(name: "Signature-Input")
            headers.remove(name: "Signature")
            for value in [own.signatureInput] + inputs { headers.add(name: "Signature-Input", value: value) }
            for value in [own.signature] + signatures { headers.add(name: "Signature", value: value) }
        case .none:
            break
        case .changePrice where isFeed:
            body = try Self.editFeed(body) { $0[0].price += 1 }
        case let .replaceChecksumAndImage(piece) where isFeed:
            let forged = "sha256:" + SHA256Hex.digest(Self.forgedImage)
            body = try Self.editFeed(body) { feed in
                for index in feed.indices where feed[index].url == "/gallery/image?\(piece)" { feed[index].checksum = forged }
            }
            headers.replaceOrAdd(name: "Content-Digest", value: ContentDigest.fieldValue(for: body))
        case let .replaceChecksumAndImage(piece) where request.uri.string == "/gallery/image?\(piece)",
             let .replaceImage(piece) where request.uri.string == "/gallery/image?\(piece)":
            body = Self.forgedImage
            headers.remove(name: "Content-Digest")
        case .removeSignature:
            headers.remove(name: "Signature")
            headers.remove(name: "Signature-Input")
        case let .resign(key, _) where isFeed, let .resignBody(key, _) where isFeed:
            switch attack {
            case let .resign(_, edit): body = try Self.editFeed(body, edit)
            case let .resignBody(_, replacement): body = replacement
            default: break
            }
            headers.replaceOrAdd(name: "Content-Digest", value: ContentDigest.fieldValue(for: body))
            let fields = headers
            let signature = try MessageSignature.sign(
                status: 200, field: { fields[$0].first }, requestField: { $0 == FeedNonce.field ? nonce : nil },
                key: key, keyID: key.fingerprint, created: Date(), expires: Date().addingTimeInterval(3600)
            )
            headers.replaceOrAdd(name: "Signature-Input", value: signature.signatureInput)
            headers.replaceOrAdd(name: "Signature", value: signature.signature)
        default:
            break
        }
        return Self.response(status: Int(response.status.code), headers: headers, body: body)
    }

    static let nonceField = HTTPField.Name("EmojiArt-Feed-Nonce")!
    static let originField = HTTPField.Name("EmojiArt-Gallery-Origin")!

    /// The answer passed on: `headers` but their framing, and `body`.
    private static func response(status: Int, headers: HTTPHeaders, body: [UInt8]) -> Response {
        var fields = HTTPFields()
        for header in headers where header.name.lowercased() != "content-length" && header.name.lowercased() != "transfer-encoding" {
            if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
        }
        return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    private static func editFeed(_ bytes: [UInt8], _ edit: (inout [ImageFile]) -> Void) throws -> [UInt8] {
        var feed = try JSONDecoder().decode([ImageFile].self, from: Data(bytes))
        edit(&feed)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(feed))
    }
}
