import Foundation
import Hummingbird

/// `POST /gallery/test/revise`: publishes the next revision now and answers what changed, as
/// JSON `{"revision": N, "pieces": [...]}`. Served only when revisions are on
/// (``GalleryConfiguration/revisionInterval``, `emojiart gallery --revise-every S`), and to no
/// web page (``NotFromPagesMiddleware``).
struct RevisionController<Context: RequestContext>: Sendable {
    let publication: Publication

    struct Answer: Codable {
        var revision: Int
        var pieces: [Int]
    }

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.add(middleware: NotFromPagesMiddleware())
        routes.post("revise") { _, _ in
            let edition = try await publication.revise()
            let json = try JSONEncoder().encode(Answer(revision: edition.revision, pieces: edition.revisedPieces))
            return Response(
                status: .ok,
                headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: json))
            )
        }
        return routes
    }
}
