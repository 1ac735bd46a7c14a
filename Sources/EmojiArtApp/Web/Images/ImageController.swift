import FastLane
import HTTPCaching
import HTTPTypes
import Hummingbird
import ImageCache
import NIOCore

/// `GET /thumbs/N` (200 px) and `GET /large/N` (600 px): variants of piece N through the
/// ``ImageDatabase``; `HEAD` too.
///
/// Each answer carries a strong `ETag` (the SHA-256 of its bytes) and a matching
/// `If-None-Match` is answered 304 with no body, after the image was looked up, so the toolbar's
/// counters still show what the app's caches did. `Cache-Control` follows ``HTTPCacheMode``.
/// Memory hits are answered the same way, byte for byte, by ``fastLane`` on the event loop when
/// the lane is on.
struct ImageController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("thumbs/:piece") { request, context in
            try await image(request, context, route: .thumbs)
        }
        routes.get("large/:piece") { request, context in
            try await image(request, context, route: .large)
        }
        return routes
    }

    func image(_ request: Request, _ context: Context, route: ImageRoute) async throws -> Response {
        try Self.checkQuery(request)
        let piece = context.parameters.get("piece", as: Int.self)
        let version = request.uri.queryParameters.get("v").map { Substring($0) }
        // What the lane found for this very request, if it saw it: its plan and its look in
        // memory, used while the feed is the one it was planned on.
        let handoff = (FastLane.handoff as? LaneHandoff).flatMap {
            $0.isFor(route, piece: piece, version: version) && services.isCurrent($0.load) ? $0 : nil
        }
        switch handoff.map({ .load($0.load) }) ?? services.plan(route, piece: piece, version: version) {
        case let .notFound(message):
            throw HTTPError(.notFound, message: message)
        case let .redirect(location):
            return Response(status: .temporaryRedirect, headers: [.location: location, .cacheControl: "no-store"])
        case let .load(plan):
            let image: Image
            do {
                if let handoff {
                    image = try await services.database.image(after: handoff.miss)
                } else {
                    image = try await services.database.image(plan.request)
                }
            } catch ImageLoader.Error.httpStatus(404, _) {
                throw HTTPError(.notFound, message: "the gallery does not have piece \(plan.piece)")
            } catch {
                throw HTTPError(.badGateway, message: "\(error)")
            }
            let answer = services.answer(plan, image: image, ifNoneMatch: request.headers[.ifNoneMatch])
            return Response(status: answer.status, headers: answer.headerFields, body: .init(byteBuffer: answer.body))
        }
    }

    /// Refuses a query with a parameter image URLs do not define (all but one `v=`): each
    /// distinct query would be a new entry in a cache in front (an edge keyed on the whole URL)
    /// for the same image.
    static func checkQuery(_ request: Request) throws {
        var versions = 0
        for (name, _) in request.uri.queryParameters {
            guard name == "v" else {
                throw HTTPError(.badRequest, message: "image URLs take no query parameter \"\(name.prefix(40))\": only v=, as the catalog's pages link them")
            }
            versions += 1
        }
        guard versions <= 1 else { throw HTTPError(.badRequest, message: "image URLs take one v=, not \(versions)") }
    }

    /// The memory hits of both routes, answered on the event loop: the same plan and answer as
    /// the routes, and `nil` (passed on to them) for anything else: a `Host` the app does not
    /// serve (the router answers 421), a miss, a redirect, an unknown piece, a query other than
    /// `v=` (the route answers 400 to one it does not define).
    ///
    /// A miss is handed to the route with its plan and its look in memory (``LaneHandoff``): the
    /// route plans nothing (unless the feed changed in between) and goes on with
    /// `ImageDatabase.image(after:)`, which looks in memory again only as its flight's leader
    /// (or when memory held a stale entry).
    var fastLane: FastLane.Responder {
        { [services] request in
            // The first `Host`, as the router reads it; none passes there too (HTTP/1.0).
            if let host = request.firstValue(of: "Host"), !services.allowedHosts.allows(host: host.utf8[...]) { return nil }
            guard let target = ImageRoute.parse(request.target),
                  case let .load(plan) = services.plan(target.route, piece: target.piece, version: target.version)
            else { return nil }
            switch services.database.lookInMemory(plan.variant.request) {
            case let .hit(image):
                return services.answer(plan, image: image, ifNoneMatch: request.field("If-None-Match"))
            case let .miss(miss):
                request.handoff = LaneHandoff(route: target.route, piece: target.piece, version: target.version, load: plan, miss: miss)
                return nil
            }
        }
    }
}

/// What the lane found for an image request it passed on: the route goes on from there.
struct LaneHandoff: Sendable {
    let route: ImageRoute
    let piece: Int
    let version: Substring?
    let load: AppServices.ImageLoad
    let miss: ImageDatabase.MemoryMiss

    /// Whether it was made for the request the route is answering (it always is, request for
    /// request; checked all the same).
    func isFor(_ route: ImageRoute, piece: Int?, version: Substring?) -> Bool {
        self.route == route && self.piece == piece && self.version == version
    }
}

/// The two image routes.
enum ImageRoute: String, Sendable {
    case thumbs
    case large

    /// `/thumbs/N` or `/large/N` with N in ASCII digits, and no query or one `v=` of letters and
    /// digits; `nil` for any other form (the router answers those).
    static func parse(_ path: String) -> (route: ImageRoute, piece: Int, version: Substring?)? {
        let utf8 = path.utf8
        let route: ImageRoute
        let prefix: Int
        if utf8.starts(with: "/thumbs/".utf8) {
            (route, prefix) = (.thumbs, 8)
        } else if utf8.starts(with: "/large/".utf8) {
            (route, prefix) = (.large, 7)
        } else {
            return nil
        }
        // By UTF-8 offsets: the path is ASCII where it matters, and counting characters would cost
        // more than the memory hit this leads to.
        var rest = utf8[utf8.index(utf8.startIndex, offsetBy: prefix)...]
        var piece = 0
        var digits = 0
        while let byte = rest.first, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            guard digits < 9 else { return nil }
            piece = piece * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            rest = rest.dropFirst()
        }
        guard digits > 0 else { return nil }
        guard let mark = rest.first else { return (route, piece, nil) }
        let query = rest.dropFirst()
        guard mark == UInt8(ascii: "?"), query.starts(with: "v=".utf8) else { return nil }
        let version = query.dropFirst(2)
        guard !version.isEmpty, version.count <= 64, version.allSatisfy({
            ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z"))
        }) else { return nil }
        return (route, piece, Substring(version))
    }
}

