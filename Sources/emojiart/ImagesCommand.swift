import ArgumentParser
import FastLane
import Foundation
import Hummingbird
import ImageService
import Logging
import ServiceLifecycle
import UnixSignals

/// `emojiart images`: the image service on its own, and its signed URLs.
struct ImagesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "images",
        abstract: "An image service that serves imgproxy's signed URLs, and a tool that signs them.",
        subcommands: [ImagesServeCommand.self, ImagesSignCommand.self]
    )
}

/// `emojiart images serve`: the image service alone.
struct ImagesServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve imgproxy's signed URLs: thumbnails and conversions of images from allowed sources.",
        discussion: """
            Paths are imgproxy's: /<signature>/<processing options>/plain/<source URL>[@<extension>] or \
            /<signature>/<processing options>/<base64url source>[.<extension>], signed with HMAC-SHA256 of the salt and \
            the path after the signature. Every source is fetched once for all its variants and kept, with the variants, \
            in --cache-dir. Also GET /health and GET /metrics (Prometheus). Stops cleanly on Ctrl-C or SIGTERM.
            """
    )

    @OptionGroup var server: ServerOptions
    @OptionGroup var cache: CacheOptions
    @OptionGroup var service: ImageServiceOptions

    func run() async throws {
        let configuration = try service.configuration()
        let pipeline = ImageServer.makePipeline(configuration, diskDirectory: cache.directory.appendingPathComponent("image-service"))
        let imageServer = try ImageServer(configuration: configuration, pipeline: pipeline)
        let serverConfiguration = ImageService.ServerConfiguration(
            host: server.host, port: server.port, idleTimeout: server.idleTime,
            connections: ConnectionLimits(requestTimeout: server.requestTime, sendTimeout: server.requestTime, maxConnections: server.connectionCap())
        )
        let app = await ImageService.buildApplication(imageServer, configuration: serverConfiguration) { port in
            say("image service: \(ImageServiceOptions.signingNotice(configuration))")
            say("image service: open http://\(server.host.contains(":") ? "[\(server.host)]" : server.host):\(port)/<signature>/<options>/plain/<source URL>")
        }
        let services = ServiceGroup(configuration: .init(
            services: [ServeCommand.ending(BindErrorsReported(service: app, port: server.port, option: "--port"))],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "emojiart")
        ))
        try await services.run()
    }
}

/// `emojiart images sign`: prints a signed URL, as imgproxy's docs give code for.
struct ImagesSignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print the signed URL of a source and processing options.",
        discussion: "Example: emojiart images sign --key-file ~/.config/imgproxy.env --base http://127.0.0.1:8080 rs:fit:300:300 https://example.com/photo.jpg"
    )

    @Option(help: ArgumentHelp("The service's address the path is put after, such as http://127.0.0.1:8080 or https://example.com/img.", valueName: "url"))
    var base = ""

    @Flag(help: "Give the source as URL-safe base64, not after /plain/.")
    var base64 = false

    @Option(name: .customLong("extension"), help: ArgumentHelp("The format of the result, as the URL's extension: jpg, png, webp, avif or gif.", valueName: "ext"))
    var fileExtension: String?

    @OptionGroup var keys: KeyOptions

    @Argument(help: "Processing options, '/'-separated, such as rs:fill:300:300/q:80 (none: '').")
    var options: String

    @Argument(help: "The source image's URL.")
    var source: String

    func run() throws {
        guard let signer = try keys.signer() else {
            throw ValidationError("give the key and the salt: --key-file, or --key and --salt, or IMGPROXY_KEY and IMGPROXY_SALT")
        }
        let path = signer.path(
            options: options.split(separator: "/").map(String.init), source: source, extension: fileExtension, encoding: base64 ? .base64 : .plain
        )
        say((base.hasSuffix("/") ? String(base.dropLast()) : base) + path)
    }
}
