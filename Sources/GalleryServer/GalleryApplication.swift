import Foundation
import HTTPCaching
public import Hummingbird
import HummingbirdCore
public import Logging
public import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// The gallery's Hummingbird application: Hummingbird's own `Application`, except that every
/// answer's `Date` comes from the gallery's wall clock (``GalleryConfiguration/now``), the
/// clock its `Last-Modified` and signatures are dated by, so a test that moves one moves all.
/// (`Application` dates answers by the system clock, after the responder has run.) It also runs
/// the timed revisions, when they are on, for as long as the server does.
public struct GalleryApplication: ApplicationProtocol {
    /// The router's responder.
    public typealias Responder = RouterResponder<BasicRequestContext>

    /// The router's responder.
    public let responder: Responder
    /// The HTTP server: HTTP/1.1, with the fast lane when it is on.
    public let server: HTTPServerBuilder
    /// Address and server name.
    public let configuration: ApplicationConfiguration
    /// The server's logger.
    public let logger: Logger
    let now: @Sendable () -> Date
    let running: @Sendable (Int) async -> Void
    let revisions: (interval: Duration, clock: any Clock<Duration>, publication: Publication)?

    /// Reports the bound port.
    public func onServerRunning(_ channel: any Channel) async {
        await running(channel.localAddress?.port ?? 0)
    }

    /// Serves until cancelled or shut down gracefully.
    public func run() async throws {
        let responder = responder
        let logger = logger
        let now = now
        let serverName = configuration.serverName
        let server = try self.server.buildServer(
            configuration: ServerConfiguration(
                address: configuration.address, serverName: configuration.serverName, backlog: configuration.backlog,
                reuseAddress: configuration.reuseAddress
            ),
            eventLoopGroup: eventLoopGroup, logger: logger
        ) { (request, responseWriter: consuming ResponseWriter, channel) in
            let context = BasicRequestContext(source: .init(channel: channel, logger: logger))
            var response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as HTTPParserError {
                throw error
            } catch {
                logger.debug("unhandled error: \(error)")
                response = Response(status: .internalServerError)
            }
            response.headers[.date] = HTTPDate.format(now())
            if let serverName { response.headers[.server] = serverName }
            try await responseWriter.write(response: response.head, body: response.body)
        } onServerRunning: {
            await self.onServerRunning($0)
        }
        var services: [any Service] = [server]
        if let revisions { services.append(RevisionTimer(revisions: revisions, logger: logger)) }
        try await ServiceGroup(configuration: .init(services: services, logger: logger)).run()
    }
}

/// Publishes a revision every interval until cancelled or shut down.
private struct RevisionTimer: Service {
    let revisions: (interval: Duration, clock: any Clock<Duration>, publication: Publication)
    let logger: Logger

    func run() async throws {
        try await cancelWhenGracefulShutdown {
            while true {
                try await revisions.clock.sleep(for: revisions.interval)
                do {
                    let edition = try await revisions.publication.revise()
                    logger.info("published revision \(edition.revision): new art for pieces \(edition.revisedPieces)")
                } catch {
                    logger.error("revision failed, the art stays as it was: \(error)")
                }
            }
        }
    }
}
