import Foundation
import Hummingbird

/// The control routes of an ``ImageGate``, added under `/gallery/test/` only when the gallery
/// runs with one (`emojiart gallery --hold-images`):
///
/// - `GET /gallery/test/gate`: the gate's ``ImageGate/Status`` as JSON;
/// - `POST /gallery/test/release?count=N`: lets N more image requests through (N in 1...10000);
/// - `POST /gallery/test/open`: lets every image request through from now on.
///
/// Each answers the gate's status after the change. No web page may use them
/// (``NotFromPagesMiddleware``).
struct GateController<Context: RequestContext>: Sendable {
    let gate: ImageGate

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.add(middleware: NotFromPagesMiddleware())
        routes.get("gate") { _, _ in status() }
        routes.post("release") { request, _ in
            guard let text = request.uri.queryParameters["count"], text.utf8.count <= 5,
                  let count = Int(text), (1...10_000).contains(count)
            else {
                throw HTTPError(.badRequest, message: "say how many image requests to let through: POST /gallery/test/release?count=N with N in 1...10000")
            }
            gate.release(count)
            return status()
        }
        routes.post("open") { _, _ in
            gate.open()
            return status()
        }
        return routes
    }

    private func status() -> Response {
        let json = (try? JSONEncoder().encode(gate.status)) ?? Data("{}".utf8)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: json))
        )
    }
}
