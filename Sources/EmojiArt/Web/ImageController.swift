import Hummingbird
import ImageCache

/// `GET /thumbs/N` (200 px) and `GET /large/N` (600 px): variants of piece N through the
/// ``ImageDatabase``.
///
/// Answers carry `Cache-Control: no-store`: the browser's own HTTP cache would otherwise answer
/// reloads itself, and the toolbar's counters would stop showing what the app's caches do.
struct ImageController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("thumbs/:piece") { _, context in try await image(context, processor: services.thumbnail) }
        routes.get("large/:piece") { _, context in try await image(context, processor: services.large) }
        return routes
    }

    func image(_ context: Context, processor: ThumbnailProcessor) async throws -> Response {
        guard let number = context.parameters.get("piece", as: Int.self),
              let request = services.request(piece: number, processor: processor)
        else {
            throw HTTPError(.notFound, message: "no such piece in the feed")
        }
        let image: Image
        do {
            image = try await services.database.image(request)
        } catch ImageLoader.Error.httpStatus(404, _) {
            throw HTTPError(.notFound, message: "the gallery does not have piece \(number)")
        } catch {
            throw HTTPError(.badGateway, message: "\(error)")
        }
        return Response(
            status: .ok,
            headers: [.contentType: image.contentType, .cacheControl: "no-store", .contentLength: "\(image.data.count)"],
            body: .init(byteBuffer: ByteBuffer(bytes: image.data))
        )
    }
}
