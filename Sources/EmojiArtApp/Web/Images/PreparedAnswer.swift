import FastLane
import HTTPTypes
import ImageCache
import NIOCore
import Synchronization

/// A variant's answer made once for the bytes memory holds (each format and density of a piece
/// has its own): its ETag, its body and its heads (status and header fields, which the fast
/// lane keeps encoded), for the mode's plain `Cache-Control` and, with a current `v=`, for the
/// immutable one.
final class PreparedAnswer: Sendable {
    /// The bytes it was made from, held so the identity comparison in ``isMade(from:)`` is sound.
    let data: [UInt8]
    let contentType: String
    let etag: String
    let body: ByteBuffer
    let plain: FastLane.Heads
    let versioned: FastLane.Heads

    init(image: Image, etag: String, cacheControl: ImageCacheControl) {
        data = image.data
        contentType = image.contentType
        self.etag = etag
        body = ByteBuffer(bytes: image.data)
        func heads(_ cacheControl: String) -> FastLane.Heads {
            // In this order, the order the route has always sent; `nosniff` last, where the
            // router's middleware adds it to every answer (see `NoSniffMiddleware`).
            // `Vary: Accept` on every image answer, 304s included: the format follows `Accept`.
            let validators = [
                HTTPField(name: .eTag, value: etag), HTTPField(name: .cacheControl, value: cacheControl), HTTPField(name: .vary, value: "Accept"),
            ]
            let noSniff = HTTPField(name: .xContentTypeOptions, value: "nosniff")
            let ok = HTTPFields(validators + [
                HTTPField(name: .contentType, value: Self.servedContentType(image.contentType)),
                HTTPField(name: .contentLength, value: String(image.data.count)),
                noSniff,
            ])
            return FastLane.Heads(ok: ok, notModified: HTTPFields(validators + [noSniff]))
        }
        plain = heads(cacheControl.plain)
        versioned = heads(cacheControl.versioned)
    }

    /// The image types an image route answers with as they are stored. Everything else is sent as
    /// `application/octet-stream`: an entry's type is bytes read from disk, and one that says
    /// `text/html` or `image/svg+xml` (both can run script) must not make the app's origin serve
    /// a page; with `nosniff` the browser then guesses nothing either.
    static let servableTypes: Set<String> = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]

    /// The `Content-Type` an image answer carries for a stored `contentType`: the stored one when
    /// its media type (before any parameter, in any case) is one of ``servableTypes``, else
    /// `application/octet-stream`.
    static func servedContentType(_ contentType: String) -> String {
        let mediaType = String(contentType.prefix { $0 != ";" }.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()).lowercased()
        return servableTypes.contains(mediaType) ? contentType : "application/octet-stream"
    }

    /// The bytes this answer keeps alive: its body and the image's array.
    var heldBytes: Int { body.readableBytes + data.count }

    /// Whether `image` holds the very bytes this was made from: the same array storage, which
    /// this answer keeps alive, so it cannot have been reused for other bytes.
    func isMade(from image: Image) -> Bool {
        guard image.data.count == data.count, image.contentType == contentType else { return false }
        return image.data.withUnsafeBufferPointer { a in data.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
    }

    /// The answer, `versioned` or not: 200 with the bytes, or 304 when `notModified`.
    func answer(versioned isVersioned: Bool, notModified: Bool) -> FastLane.Answer {
        (isVersioned ? versioned : plain).answer(body: body, notModified: notModified)
    }
}
