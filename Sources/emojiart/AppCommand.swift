import ArgumentParser
import EmojiArtApp
import Foundation
import Hummingbird
import ImageCache
import ImageService
import Logging
import HTTPCaching

/// `emojiart app`: the web app against a running gallery.
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Serve the EmojiArt web app against a gallery.",
        discussion: "Loads the gallery's feed, verifies every image with a live progress bar, then shows the catalog. Images are cached by HTTP's rules (fresh ones cost no request, stale ones a conditional one); when the gallery is unreachable the cached catalog and images are shown and the page says so. The feed is authenticated for each request (a fresh nonce the gallery signs over) and for its gallery (its signed origin must be --gallery-origin, by default the origin of --gallery), and asked for again at most once per --feed-check-interval whatever catalog loads ask; the page says when it was last authenticated, and past its signature's life that its prices are stale. With --allowed-source (or IMGPROXY_ALLOWED_SOURCES) it also serves imgproxy's signed URLs under /img/, as `emojiart images serve` does. Stops cleanly on Ctrl-C or SIGTERM."
    )

    @OptionGroup var client: GalleryClientOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var cache: CacheOptions
    @OptionGroup var answers: AnswerOptions
    @OptionGroup(title: "Image service (served at /img/ when an allowed source is given)") var imageService: ImageServiceOptions

    @Option(help: ArgumentHelp("Ask the gallery whether its feed changed at most once per S seconds, however many catalog loads ask; no field of the gallery's answers lengthens or shortens it.", valueName: "seconds"))
    var feedCheckInterval: Int = 30

    @Flag(help: "Behind an edge on this machine that names each request's client in EmojiArt-Client-Address (emojiart cluster's nginx, deploy/nginx): the address each client's event streams are counted for, taken from a loopback peer only. Without it every client behind the edge is one address.")
    var behindEdge = false

    func validate() throws {
        guard (0...86_400).contains(feedCheckInterval) else { throw ValidationError("--feed-check-interval must be 0 to 86400 seconds, got \(feedCheckInterval)") }
    }

    func run() async throws {
        var configuration = AppConfiguration(
            host: server.host, port: server.port, galleryURL: client.galleryURL, concurrency: client.concurrency,
            trust: client.trust, offline: client.offline, httpCache: answers.httpCache, instanceName: answers.instanceName,
            fastLane: server.fastLane, compression: answers.compression, formats: answers.servedFormats,
            allowedHosts: answers.allowedHost
        )
        configuration.idleTimeout = server.idleTime
        (configuration.requestTimeout, configuration.maxConnections) = (server.requestTime, server.connectionCap())
        configuration.galleryOrigin = client.expectedOrigin
        configuration.feedCheckInterval = .seconds(feedCheckInterval)
        configuration.clientAddressFromEdge = behindEdge
        configuration.warmUpBudget = answers.warmUpBudget << 20
        configuration.warmUpPixelBudget = answers.warmUpMegapixels * 1_000_000
        if imageService.isGiven {
            let service = try imageService.configuration(pathPrefix: "/img")
            let pipeline = ImageServer.makePipeline(service, diskDirectory: cache.directory.appendingPathComponent("image-service"))
            configuration.imageService = try ImageServer(configuration: service, pipeline: pipeline)
        }
        let app = try await EmojiArtApp.buildApplication(configuration, pipeline: cache.pipeline()) { [imageService = configuration.imageService] port in
            say("EmojiArt: open \(URL.origin(host: server.host, port: port))/")
            if let imageService {
                say("image service: \(URL.origin(host: server.host, port: port))/img/ (\(ImageServiceOptions.signingNotice(imageService.configuration)))")
            }
        }
        try await runReportingBindErrors(port: configuration.port) { try await app.runService() }
    }
}
