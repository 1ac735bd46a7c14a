import HTTPCaching
import Hummingbird
import ImageCache

/// `GET /thumbs/N` (200 px) and `GET /large/N` (600 px): variants of piece N through the
/// ``ImageDatabase``; `HEAD` too.
///
/// Each answer carries a strong `ETag` (the SHA-256 of its bytes) and a matching
/// `If-None-Match` is answered 304 with no body, after the image was looked up, so the toolbar's
/// counters still show what the app's caches did. `Cache-Control` follows ``HTTPCacheMode``.
struct ImageController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("thumbs/:piece") { request, context in
            try await image(request, context, route: "thumbs", processor: services.thumbnail)
        }
        routes.get("large/:piece") { request, context in
            try await image(request, context, route: "large", processor: services.large)
        }
        return routes
    }

    func image(_ request: Request, _ context: Context, route: String, processor: ThumbnailProcessor) async throws -> Response {
        guard let number = context.parameters.get("piece", as: Int.self),
              let file = services.model.feedByPiece.value[number],
              let imageRequest = services.request(piece: number, processor: processor)
        else {
            throw HTTPError(.notFound, message: "no such piece in the feed")
        }
        let path = "/\(route)/\(number)"
        var cacheControl = services.httpCache == .noStore ? "no-store" : "no-cache"
        if services.httpCache == .immutable, let version = request.uri.queryParameters.get("v") {
            let current = AppServices.version(file, processor: processor)
            guard version == current else {
                // Another original or another variant than the URL names: send the current one.
                return Response(status: .temporaryRedirect, headers: [.location: "\(path)?v=\(current)", .cacheControl: "no-store"])
            }
            cacheControl = "public, max-age=31536000, immutable"
        }
        let image: Image
        do {
            image = try await services.database.image(imageRequest)
        } catch ImageLoader.Error.httpStatus(404, _) {
            throw HTTPError(.notFound, message: "the gallery does not have piece \(number)")
        } catch {
            throw HTTPError(.badGateway, message: "\(error)")
        }
        let etag = services.etag(of: image, piece: number, variant: processor.identifier)
        var headers: HTTPFields = [.eTag: etag, .cacheControl: cacheControl]
        if let ifNoneMatch = request.headers[.ifNoneMatch], ConditionalRequest.matches(ifNoneMatch, etag: etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = image.contentType
        headers[.contentLength] = "\(image.data.count)"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: image.data)))
    }
}
