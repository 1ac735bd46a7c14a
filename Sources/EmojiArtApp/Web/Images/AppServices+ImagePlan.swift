import FastLane
import GalleryFeed
import HTTPCaching
import HTTPTypes
import Hummingbird
import ImageCache
import NIOCore

extension AppServices {
    /// What an image request needs: the piece's request through the pipeline, or no such
    /// piece, or a redirect to the current `v=`.
    enum ImagePlan {
        case notFound(String)
        case redirect(String)
        case load(ImageLoad)
    }

    /// A piece's variant to load and how to answer it.
    struct ImageLoad {
        let variant: ServedVariant
        /// Whether the URL named the current `v=` (``HTTPCacheMode/immutable`` only).
        let versioned: Bool

        var piece: Int { variant.key.piece }
        var request: ImageRequest { variant.request }
    }

    /// The `Cache-Control` values of image answers in this app's mode.
    var cacheControl: ImageCacheControl { ImageCacheControl(httpCache) }

    /// The format to answer a request whose `Accept` is `accept` with (all its lines joined).
    func format(accept: String?) -> ServedFormat {
        ServedFormat.negotiate(accept, offered: formats)
    }

    /// The plan for `kind` of `piece`, asked with `version` (`v=`), if any.
    func plan(_ kind: VariantKind, piece: Int?, version: Substring?) -> ImagePlan {
        guard let piece, let entry = entry(piece: piece, kind: kind) else {
            return .notFound("no such piece in the feed")
        }
        var versioned = false
        if httpCache == .immutable, let version {
            let current = entry.variant.version
            // Another original or another variant than the URL names: send the current one.
            guard version == current else {
                let density = kind.density == 1 ? "" : "\(kind.density)x/"
                return .redirect("/\(kind.route.rawValue)/\(density)\(piece)?v=\(current)")
            }
            versioned = true
        }
        return .load(ImageLoad(variant: entry.variant, versioned: versioned))
    }

    /// The answer with `image`: 200 with the bytes, or 304 when `ifNoneMatch` matches its ETag.
    /// Made once for the bytes memory holds and kept with them there (``PreparedAnswer``), then
    /// reused. A
    /// `provisional` answer (another format than the client's best, while that one is made) is
    /// never marked immutable: no cache may keep it under the URL's better answer.
    func answer(_ load: ImageLoad, image: Image, ifNoneMatch: String?, provisional: Bool = false) -> FastLane.Answer {
        let prepared: PreparedAnswer
        if let made = image.attachment as? PreparedAnswer {
            prepared = made
        } else {
            let etag = variants.etag(of: image, load.variant) ?? "\"" + SHA256Hex.digest(image) + "\""
            prepared = PreparedAnswer(image: image, etag: etag, cacheControl: cacheControl)
            variants.keep(etag: etag, of: image, for: load.variant)
            // With the very bytes memory holds, if it still does (else made again next time).
            pipeline.memory.attach(prepared, toBytesOf: image, forKey: load.request.cacheKey)
        }
        let notModified = ifNoneMatch.map { ConditionalRequest.matches($0, etag: prepared.etag) } ?? false
        return prepared.answer(with: image, versioned: load.versioned && !provisional, notModified: notModified)
    }
}
