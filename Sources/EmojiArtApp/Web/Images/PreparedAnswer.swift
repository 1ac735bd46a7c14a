import FastLane
import HTTPCaching
import HTTPTypes
import ImageCache
import NIOCore
import Synchronization

/// A variant's answer made once for the bytes memory holds (each format and density of a piece
/// has its own): its ETag and its heads (status and header fields, which the fast lane keeps
/// encoded), for the mode's plain `Cache-Control` and, with a current `v=`, for the immutable
/// one. Kept in memory with the image it was made from, as its ``Image/attachment``: in the
/// memory cache's one budget, evicted with the image; the body is the image's own buffer, never
/// a copy.
final class PreparedAnswer: ImageAttachment {
    let etag: String
    let plain: FastLane.Heads
    let versioned: FastLane.Heads
    /// What the heads hold, roughly: their names and values.
    let cost: Int

    init(image: Image, etag: String, cacheControl: ImageCacheControl) {
        self.etag = etag
        func heads(_ cacheControl: String) -> FastLane.Heads {
            // In this order, the order the route has always sent; `nosniff` last, where the
            // router's middleware adds it to every answer (see `NoSniffMiddleware`).
            // `Vary: Accept` on every image answer, 304s included: the format follows `Accept`.
            let validators = [
                HTTPField(name: .eTag, value: etag), HTTPField(name: .cacheControl, value: cacheControl), HTTPField(name: .vary, value: "Accept"),
            ]
            let noSniff = HTTPField(name: .xContentTypeOptions, value: "nosniff")
            let ok = HTTPFields(validators + [
                HTTPField(name: .contentType, value: ServedImageType.contentType(for: image.contentType)),
                HTTPField(name: .contentLength, value: String(image.byteCount)),
                noSniff,
            ])
            return FastLane.Heads(ok: ok, notModified: HTTPFields(validators + [noSniff]))
        }
        plain = heads(cacheControl.plain)
        versioned = heads(cacheControl.versioned)
        cost = 2 * (etag.utf8.count + cacheControl.plain.utf8.count + cacheControl.versioned.utf8.count + image.contentType.utf8.count) + 512
    }

    /// The answer with `image`'s bytes (those it was made from), `versioned` or not: 200 with
    /// the bytes, or 304 when `notModified`.
    func answer(with image: Image, versioned isVersioned: Bool, notModified: Bool) -> FastLane.Answer {
        (isVersioned ? versioned : plain).answer(body: image.buffer, notModified: notModified)
    }
}
