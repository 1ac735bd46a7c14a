public import Hummingbird
import HTTPTypes

/// The routes of an ``ImageServer``: every `GET` (and `HEAD`) under the configuration's
/// ``ImageServiceConfiguration/pathPrefix`` is an imgproxy URL, answered by
/// ``ImageServer/answer(path:query:accept:ifNoneMatch:now:)``. The path is read as sent (the signature
/// covers its bytes), never as the router split it.
public struct ImageServiceController<Context: RequestContext>: Sendable {
    /// The service answering.
    public let server: ImageServer

    /// Routes for `server`.
    public init(server: ImageServer) {
        self.server = server
    }

    /// The service's one route, for a router that generates `HEAD` from `GET`.
    public var endpoints: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        let prefix = server.configuration.pathPrefix
        routes.get(RouterPath(prefix.isEmpty ? "**" : String(prefix.dropFirst()) + "/**")) { request, _ in
            var path = Substring(request.uri.path)
            if !prefix.isEmpty { path = path.dropFirst(prefix.utf8.count) }
            let answer = await server.answer(
                path: String(path), query: request.uri.query, accept: request.headers[values: .accept].joined(separator: ", "),
                ifNoneMatch: request.headers[.ifNoneMatch]
            )
            return Response(status: answer.status, headers: answer.headerFields, body: .init(byteBuffer: answer.body))
        }
        return routes
    }
}
