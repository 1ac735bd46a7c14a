import FastLane
import HTTPCaching
import HTTPTypes
import Hummingbird
import ImageCache
import NIOCore

/// `GET /thumbs/N` (200 px box) and `GET /large/N` (600 px box), and their 2x variants
/// `/thumbs/2x/N` and `/large/2x/N` (boxes twice as large, never larger than the original):
/// variants of piece N through the app's ``ImagePipeline``, in the format the request's `Accept`
/// names (``ServedFormat``); `HEAD` too.
///
/// Each answer carries `Vary: Accept` and a strong `ETag` (the SHA-256 of its bytes: each format
/// has its own), and a matching `If-None-Match` is answered 304 with no body, after the image
/// was looked up, so the toolbar's counters still show what the app's caches did.
/// `Cache-Control` follows ``HTTPCacheMode``. A variant in a format slow to encode (AVIF, WebP)
/// that is neither in memory nor on disk is not waited for: the best format the client accepts
/// that is made (PNG, made then, when none is) is sent at once, never marked immutable, while the
/// slow one is made in the background, at very low priority (``AppServices/encoder``).
/// Memory hits are answered the same way, byte for byte, by ``fastLane`` on the event loop when
/// the lane is on.
struct ImageController<Context: RequestContext>: Sendable {
    let services: AppServices

    var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        for route in [ImageRoute.thumbs, .large] {
            routes.get("\(route.rawValue)/:piece") { request, context in
                try await image(request, context, route: route, density: 1)
            }
            routes.get("\(route.rawValue)/2x/:piece") { request, context in
                try await image(request, context, route: route, density: 2)
            }
        }
        return routes
    }

    func image(_ request: Request, _ context: Context, route: ImageRoute, density: Int) async throws -> Response {
        try Self.checkQuery(request)
        let piece = context.parameters.get("piece").flatMap(ImageRoute.pieceNumber)
        let version = request.uri.queryParameters.get("v").map { Substring($0) }
        let kind = VariantKind(route: route, density: density, format: services.format(accept: request.headers[.accept]))
        switch services.plan(kind, piece: piece, version: version) {
        case let .notFound(message):
            throw HTTPError(.notFound, message: message)
        case let .redirect(location):
            return Response(status: .temporaryRedirect, headers: [.location: location, .cacheControl: "no-store"])
        case let .load(plan):
            var load = plan
            var provisional = false
            // Not made yet in a format slow to encode: a stand-in now, the format in the background.
            if !kind.format.isQuickToEncode, !services.pipeline.isCached(plan.request),
               let standIn = services.standIn(for: kind, accept: request.headers[.accept], piece: piece, version: version) {
                (load, provisional) = (standIn, true)
            }
            let image: Image
            do {
                // Memory first (the lane missed, but a flight may have ended since), then the flight.
                image = try await services.pipeline.image(for: load.request)
            } catch ImagePipeline.Error.httpStatus(404, _) {
                throw HTTPError(.notFound, message: "the gallery does not have piece \(load.piece)")
            } catch {
                throw HTTPError(.badGateway, message: "\(error)")
            }
            if provisional {
                // Made in the background, after the requests somebody waits for; started before the
                // stand-in is sent (`backgroundEncodes` counts it).
                await services.encoder.startPrefetching(with: [plan.request])
            }
            let answer = services.answer(load, image: image, ifNoneMatch: request.headers[.ifNoneMatch], provisional: provisional)
            return Response(status: answer.status, headers: answer.headerFields, body: .init(byteBuffer: answer.body))
        }
    }

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
    /// A miss goes to the route as any request does: it plans and looks in memory again itself
    /// (microseconds, on a path of milliseconds).
    var fastLane: FastLane.Responder {
        { [services] request in
            // The first `Host`, as the router reads it; none passes there too (HTTP/1.0).
            if let host = request.firstValue(of: "Host"), !services.allowedHosts.allows(host: host.utf8[...]) { return nil }
            guard let target = ImageRoute.parse(request.target) else { return nil }
            let kind = VariantKind(route: target.route, density: target.density, format: services.format(accept: request.field("Accept")))
            guard case let .load(plan) = services.plan(kind, piece: target.piece, version: target.version) else { return nil }
            guard let image = services.pipeline.answerFromMemory(plan.variant.request) else { return nil }
            return services.answer(plan, image: image, ifNoneMatch: request.field("If-None-Match"))
        }
    }
}
