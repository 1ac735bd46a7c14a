import ArgumentParser
import EmojiArtApp
import Foundation
import GalleryServer
import Hummingbird
import Logging
import MessageSignatures
import ServiceLifecycle
import UnixSignals
import HTTPCaching

/// `emojiart` with no subcommand: the gallery and the web app together.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Start the gallery and the web app on 127.0.0.1 and print the URL to open (the default).",
        discussion: "Stops both cleanly on Ctrl-C or SIGTERM."
    )

    @OptionGroup var server: ServerOptions
    @OptionGroup var cache: CacheOptions
    @OptionGroup var answers: AnswerOptions

    @Option(help: "Port of the gallery. The same port from run to run lets the disk cache, which keeps images under the gallery's address, answer again; 0 picks a free one each time.")
    var galleryPort: Int = 8090

    @Option(help: "Seed of the gallery's feed.")
    var seed: UInt64 = GalleryConfiguration.defaultSeed

    @Option(help: "Images verified at once.")
    var concurrency: Int = 8

    func validate() throws {
        try ServerOptions.checkPort(galleryPort, option: "--gallery-port")
    }

    func run() async throws {
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        // The gallery runs in this process: the app pins its key rather than learning it.
        let key = try gallerySigningKey(nil)
        var galleryConfiguration = GalleryConfiguration(host: "127.0.0.1", port: galleryPort, seed: seed, signingKey: key, fastLane: server.fastLane)
        galleryConfiguration.idleTimeout = server.idleTime
        // Two servers in one process: the default cap halves (one descriptor table).
        (galleryConfiguration.requestTimeout, galleryConfiguration.maxConnections) = (server.requestTime, server.connectionCap(servers: 2))
        let gallery = try await Gallery.buildApplication(galleryConfiguration, logger: Logger(label: "gallery")) { port in
            portContinuation.yield(port)
        }
        // One group for both servers: when either ends (its port in use, a failure, or a stop),
        // the other is shut down gracefully, and Ctrl-C or SIGTERM stops both. (Cancelling a
        // Hummingbird server instead can trap in NIO on a connection not yet handled.)
        let services = ServiceGroup(configuration: .init(
            services: [Self.ending(BindErrorsReported(service: gallery, port: galleryPort, option: "--gallery-port"))],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "emojiart")
        ))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // A gallery that cannot start ends the stream of ports, so nothing waits for it.
                defer { portContinuation.finish() }
                try await services.run()
            }
            var iterator = ports.makeAsyncIterator()
            guard let galleryPort = await iterator.next() else {
                try await group.waitForAll()
                return
            }
            var configuration = AppConfiguration(
                host: server.host, port: server.port,
                galleryURL: URL(string: URL.origin(host: "127.0.0.1", port: galleryPort))!, concurrency: concurrency,
                trust: .pinned(fingerprint: key.fingerprint), httpCache: answers.httpCache, fastLane: server.fastLane,
                compression: answers.compression, formats: answers.servedFormats, allowedHosts: answers.allowedHost
            )
            configuration.idleTimeout = server.idleTime
            configuration.warmUpBudget = answers.warmUpBudget << 20
            configuration.warmUpPixelBudget = answers.warmUpMegapixels * 1_000_000
            (configuration.requestTimeout, configuration.maxConnections) = (server.requestTime, server.connectionCap(servers: 2))
            let app = try await EmojiArtApp.buildApplication(configuration, pipeline: cache.pipeline()) { port in
                say("gallery: \(URL.origin(host: "127.0.0.1", port: galleryPort))/gallery/images")
                say("EmojiArt: open \(URL.origin(host: server.host, port: port))/")
            }
            await services.addServiceUnlessShutdown(Self.ending(BindErrorsReported(service: app, port: configuration.port, option: "--port")))
            try await group.waitForAll()
        }
    }

    /// `service` as a member of the group whose end, by success or failure, shuts the group down.
    static func ending(_ service: some Service) -> ServiceGroupConfiguration.ServiceConfiguration {
        .init(service: service, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
    }
}

/// A server whose "address in use" says which option to change (``runReportingBindErrors(port:option:_:)``).
struct BindErrorsReported<Wrapped: Service>: Service {
    let service: Wrapped
    let port: Int
    let option: String

    func run() async throws {
        try await runReportingBindErrors(port: port, option: option) { try await service.run() }
    }
}
