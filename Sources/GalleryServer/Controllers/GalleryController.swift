import FastLane
import Foundation
import HTTPCaching
import HTTPTypes
import Hummingbird
import MessageSignatures
import Synchronization

/// `GET /gallery/images` (the feed) and `GET /gallery/image?N` (one piece), as in the book's
/// server, with real checksums, ETags and a real 404 for the missing pieces (with the images'
/// `Cache-Control`, so caches remember them as long as the pieces it has); and
/// `GET /gallery/key`, the public key the feed is signed with, as a JSON Web Key.
///
/// The feed carries `Content-Digest` (RFC 9530) and an RFC 9421 signature over its status,
/// `ETag`, content type, digest and the gallery's origin, and its 304s a signature over their
/// status, `ETag` and origin; both also over the request's nonce (`EmojiArt-Feed-Nonce`), so
/// each answers one request only. Each image carries its `Content-Digest` too. Because the feed
/// lists each image's SHA-256, a verified feed makes every verified image authentic.
struct GalleryController<Context: RequestContext>: Sendable {
    let publication: Publication
    let metrics: GalleryMetrics
    let faults: FaultInjector
    let gate: ImageGate?
    let clock: any Clock<Duration>
    let signer: FeedSigner
    /// Every image's `Cache-Control`.
    let cacheControl: String
    let publicKey: ByteBuffer
    /// Every piece's image fields for the current edition, made once per edition.
    let preparedHeads = PreparedImageHeads()

    init(
        publication: Publication, metrics: GalleryMetrics, faults: FaultInjector, gate: ImageGate?,
        clock: any Clock<Duration>, cacheControl: String, signer: FeedSigner
    ) throws {
        self.publication = publication
        self.cacheControl = cacheControl
        self.metrics = metrics
        self.faults = faults
        self.gate = gate
        self.clock = clock
        self.signer = signer
        publicKey = ByteBuffer(bytes: try JSONEncoder().encode(signer.key.publicJWK))
    }

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("images", use: images)
        routes.get("image", use: image)
        routes.get("key", use: key)
        return routes
    }

    /// The feed: `no-cache`, so clients revalidate it (a 304 costs no body), and see a revision
    /// at once. Every answer, 200 or 304, is signed afresh over the request's nonce; a malformed
    /// nonce is answered 400 (a request without one gets an unbound signature no app accepts).
    @Sendable func images(_ request: Request, context: Context) async throws -> Response {
        let nonce = request.headers[.feedNonce]
        if let nonce, !FeedNonce.isWellFormed(nonce) {
            throw HTTPError(
                .badRequest,
                message: "the EmojiArt-Feed-Nonce field must be one nonce of at least 128 bits in unpadded base64url (22 to \(FeedNonce.maximumLength) characters of A-Z a-z 0-9 - _), made afresh for each request"
            )
        }
        let edition = publication.current
        let lastModified = HTTPDate.format(edition.feedModified)
        if notModified(request.headers, etag: edition.feedETag, lastModified: edition.feedModified) {
            // Signed too: a 304 says "the feed you hold is current", and only the gallery may say so.
            var headers: HTTPFields = [.eTag: edition.feedETag, .lastModified: lastModified, .cacheControl: "no-cache"]
            try signer.sign(status: 304, &headers, nonce: nonce)
            return Response(status: .notModified, headers: headers)
        }
        metrics.served(bytes: edition.feed.readableBytes)
        var headers: HTTPFields = [
            .contentType: "application/json; charset=utf-8", .eTag: edition.feedETag, .cacheControl: "no-cache",
            .lastModified: lastModified,
            .contentDigest: edition.feedDigest,
        ]
        try signer.sign(status: 200, &headers, nonce: nonce)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: edition.feed))
    }

    /// The public key the feed is signed with, as an RFC 8037 JSON Web Key with its thumbprint
    /// as `kid`.
    @Sendable func key(_ request: Request, context: Context) async throws -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/jwk+json", .cacheControl: "no-cache"],
            body: .init(byteBuffer: publicKey)
        )
    }

    @Sendable func image(_ request: Request, context: Context) async throws -> Response {
        let edition = publication.current
        let number = try Self.pieceNumber(request.uri.query, count: edition.catalog.count)
        metrics.imageRequest(piece: number)
        // Held before anything else, missing pieces included, so a test decides every answer.
        if let gate { try await gate.pass() }
        guard edition.catalog.missing.contains(number) == false else {
            // With the images' own lifetime: a cache remembers the piece is missing as long as it
            // keeps a piece it has (RFC 9111 allows storing a 404).
            throw HTTPError(
                .notFound, headers: [.cacheControl: cacheControl],
                message: "piece \(number) is missing from the gallery (every tenth piece, 0, 10, 20, ..., always is)"
            )
        }
        let piece = edition.pieces[number]
        if faults.configuration.latency > .zero {
            try await clock.sleep(for: faults.configuration.latency)
        }
        let fault = faults.next()
        if fault == .fail {
            throw HTTPError(.internalServerError, message: "injected failure (--failure-rate): retry the request")
        }
        if fault == .none {
            let answer = plainAnswer(
                number, edition: edition, get: request.method == .get,
                ifNoneMatch: request.headers[.ifNoneMatch], ifModifiedSince: request.headers[.ifModifiedSince]
            )
            return Response(status: answer.status, headers: answer.headerFields, body: .init(byteBuffer: answer.body))
        }
        var headers = HTTPFields(imageFields(number, edition: edition))
        if notModified(request.headers, etag: piece.etag, lastModified: edition.modified[number]) {
            return Response(status: .notModified, headers: headers)
        }
        if fault == .truncate {
            // Promise the whole image, send half, then drop the connection.
            let whole = piece.png.readableBytes
            let half = piece.png.getSlice(at: piece.png.readerIndex, length: whole / 2)!
            return Response(status: .ok, headers: headers, body: ResponseBody(contentLength: whole) { writer in
                try await writer.write(half)
                throw TruncatedBody()
            })
        }
        // Corrupt: same length, one byte flipped in the middle: only the checksum can tell.
        var body = piece.png
        let middle = body.readerIndex + body.readableBytes / 2
        body.setInteger(body.getInteger(at: middle, as: UInt8.self)! ^ 0xFF, at: middle)
        headers[.contentLength] = "\(piece.png.readableBytes)"
        if request.method == .get { metrics.served(bytes: piece.png.readableBytes) }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
    }

    /// Every image answer's fields but its length, in their order.
    func imageFields(_ number: Int, edition: Edition) -> [HTTPField] {
        [
            HTTPField(name: .contentType, value: "image/png"),
            HTTPField(name: .eTag, value: edition.pieces[number].etag),
            HTTPField(name: .cacheControl, value: cacheControl),
            HTTPField(name: .lastModified, value: edition.lastModified[number]),
            HTTPField(name: .contentDigest, value: edition.imageDigests[number]),
            HTTPField(name: .xContentTypeOptions, value: "nosniff"),
        ]
    }

    /// Piece `number`'s answer with no fault: 304 when the request's validators match, else the
    /// image (its bytes counted as served for `GET`).
    func plainAnswer(_ number: Int, edition: Edition, get: Bool, ifNoneMatch: String?, ifModifiedSince: String?) -> FastLane.Answer {
        let piece = edition.pieces[number]
        let heads = preparedHeads.heads(of: number, in: edition) { imageFields($0, edition: edition) }
        let notModified = ConditionalRequest.notModified(
            ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince, etag: piece.etag, lastModified: edition.modified[number]
        )
        if get, !notModified { metrics.served(bytes: piece.png.readableBytes) }
        return heads.answer(body: piece.png, notModified: notModified)
    }

    /// `/gallery/image?N` of a piece the gallery has, answered on the event loop when neither
    /// faults nor the test gate are on (the lane is not installed then): counted in the
    /// metrics as the route counts it. Anything else is passed on (`nil`) to the route.
    var fastLane: FastLane.Responder {
        { [self] request in
            let target = request.target
            guard target.utf8.starts(with: "/gallery/image?".utf8) else { return nil }
            let query = target.utf8.dropFirst(15)
            let edition = publication.current
            guard !query.isEmpty, query.count <= 9, query.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            else { return nil }
            // At most nine ASCII digits: read in place, no string made.
            let number = query.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard number < edition.catalog.count, !edition.catalog.missing.contains(number) else { return nil }
            metrics.imageRequest(piece: number)
            let answer = plainAnswer(
                number, edition: edition, get: !request.isHead,
                ifNoneMatch: request.field("If-None-Match"), ifModifiedSince: request.field("If-Modified-Since")
            )
            metrics.imageAnswer(status: answer.status.code)
            return answer
        }
    }

    /// Parses the query of `/gallery/image?N`: one decimal number naming a piece.
    static func pieceNumber(_ query: String?, count: Int) throws -> Int {
        guard let query, !query.isEmpty else {
            throw HTTPError(.badRequest, message: "name a piece: /gallery/image?N with N in 0..<\(count)")
        }
        guard query.utf8.count <= 9, let number = Int(query) else {
            throw HTTPError(.badRequest, message: "the query must be one piece number, got \(query.prefix(40).debugDescription)")
        }
        guard (0..<count).contains(number) else {
            throw HTTPError(.notFound, message: "no piece \(number): pieces are 0..<\(count)")
        }
        return number
    }

    /// Whether a request with `headers` may be answered 304 (see `ConditionalRequest.notModified`).
    func notModified(_ headers: HTTPFields, etag: String, lastModified: Date) -> Bool {
        ConditionalRequest.notModified(
            ifNoneMatch: headers[.ifNoneMatch], ifModifiedSince: headers[.ifModifiedSince],
            etag: etag, lastModified: lastModified
        )
    }
}

/// Each piece's 200 and 304 image heads (status and fields) for one edition, made at its first
/// image answer: an answer reuses them instead of building its fields, and the fast lane keeps
/// their encoding (on its hot path).
final class PreparedImageHeads: Sendable {
    private let state = Mutex<(edition: Edition, pieces: [FastLane.Heads])?>(nil)

    /// Piece `number`'s heads in `edition`, made with `make` (a piece's fields without
    /// `Content-Length`) for every piece when `edition` is new.
    func heads(of number: Int, in edition: Edition, make: (Int) -> [HTTPField]) -> FastLane.Heads {
        if let heads = state.withLock({ $0?.edition === edition ? $0?.pieces[number] : nil }) { return heads }
        let pieces = edition.pieces.indices.map { index in
            let fields = make(index)
            let length = HTTPField(name: .contentLength, value: String(edition.pieces[index].png.readableBytes))
            return FastLane.Heads(ok: HTTPFields(fields + [length]), notModified: HTTPFields(fields))
        }
        state.withLock { $0 = (edition, pieces) }
        return pieces[number]
    }
}

/// Thrown by a body writer to cut the connection mid-body (the truncation fault).
struct TruncatedBody: Error {}
