import ArgumentParser
import Foundation
import GalleryServer
import Hummingbird
import Logging
import MessageSignatures
import NIOCore
import HTTPCaching

/// `emojiart gallery`: the book's gallery server.
struct GalleryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gallery",
        abstract: "Serve the emoji art gallery: GET /gallery/images (the feed) and GET /gallery/image?N.",
        discussion: """
            Also GET /health and GET /metrics (Prometheus). Stops cleanly on Ctrl-C or SIGTERM. The fault options and \
            --hold-images are for tests and demos and are off by default.

            The feed is signed (RFC 9421 HTTP Message Signatures, Ed25519, over its status, ETag, type and \
            Content-Digest; a 304 over its status and ETag; both over the gallery's origin, EmojiArt-Gallery-Origin, and \
            the request's nonce, EmojiArt-Feed-Nonce, afresh for each request: a malformed nonce is answered 400) with \
            the gallery's key, published at GET /gallery/key as a JSON Web Key. The origin is the bound address unless \
            --public-origin names the one apps use. The key lives in \
            $XDG_DATA_HOME/emojiart/gallery-signing.key (default ~/.local/share/emojiart/), created with mode 0600 on \
            first start; --signing-key FILE uses another (made there if it does not exist). The file holds the raw 32-byte Ed25519 private key, \
            base64-encoded, on one line (swift-crypto has no PEM form for Ed25519 keys). To rotate the key, start the \
            gallery with a new file; apps that trusted the old key refuse the feed until `emojiart trust --gallery URL`.

            With --hold-images every image request waits until it is let through: POST /gallery/test/release?count=N \
            lets N more through, POST /gallery/test/open lets all through, GET /gallery/test/gate shows the counts. \
            These routes, and POST /gallery/test/revise, refuse any request a web page sends (403).

            Images are sent with Cache-Control: public, max-age=S (--max-age), or the whole field given with \
            --cache-control, and with ETag and Last-Modified; conditional requests (If-None-Match, else \
            If-Modified-Since) are answered 304. The feed is no-cache: apps revalidate it (at most once per their \
            --feed-check-interval). \
            --revise-every S publishes new art every S seconds: three pieces get new bytes, the feed their new \
            checksums; with 0, only POST /gallery/test/revise publishes one (the route exists whenever the option is given).

            --pieces N serves a larger gallery, as a load generator: the book's 29 pieces first, then further emoji in \
            Unicode order, each with its Unicode name, on the same three palettes; every tenth piece (0, 10, 20, ...) is \
            listed but missing, and the feed lists each piece three times. All pieces are rendered at start.
            """
    )

    @OptionGroup var server: ServerOptions

    @Option(help: "Seed of the feed's order and prices; the same seed gives the same feed.")
    var seed: UInt64 = GalleryConfiguration.defaultSeed

    @Option(help: "Seconds clients may use an image without asking again (Cache-Control: max-age).")
    var maxAge: Int = 3600

    @Option(help: ArgumentHelp("The whole Cache-Control of images instead of --max-age, e.g. \"max-age=60, stale-while-revalidate=30\" or \"no-store\".", valueName: "value"))
    var cacheControl: String?

    @Option(help: ArgumentHelp("Publish new art for three pieces every S seconds; 0: only when POST /gallery/test/revise asks.", valueName: "seconds"))
    var reviseEvery: Int?

    @Option(help: ArgumentHelp("Pieces of art in the gallery: the book's 29 by default, at most \(ArtCatalog.maxPieces).", valueName: "N"))
    var pieces: Int = ArtCatalog.book.count

    @Option(help: "Delay each image request by this many milliseconds.")
    var latency: Int = 0

    @Option(help: "Probability (0-1) that an image request is answered 500.")
    var failureRate: Double = 0

    @Option(help: "Probability (0-1) that an image body is cut short after its headers.")
    var truncateRate: Double = 0

    @Option(help: "Probability (0-1) that an image is served whole but with altered bytes (a checksum mismatch).")
    var corruptRate: Double = 0

    @Option(help: "Seed of the fault generator.")
    var faultSeed: UInt64 = 1

    @Option(help: ArgumentHelp("The signing key file: one line, the base64 of a raw 32-byte Ed25519 private key. Default: the gallery's data directory, created on first start.", valueName: "file"))
    var signingKey: String?

    @Flag(help: "Hold every image request until it is released through POST /gallery/test/release?count=N (for tests).")
    var holdImages = false

    @Option(help: ArgumentHelp("The origin apps reach this gallery at, e.g. https://gallery.example: every signed feed answer names it, and apps refuse a feed naming another gallery (their --gallery-origin). Default: the bound address, http://HOST:PORT.", valueName: "url"))
    var publicOrigin: String?

    func validate() throws {
        if let publicOrigin { _ = try galleryOrigin(publicOrigin, option: "--public-origin") }
        guard latency >= 0 else { throw ValidationError("--latency must be >= 0 ms") }
        guard maxAge >= 0 else { throw ValidationError("--max-age must be >= 0 seconds") }
        if let reviseEvery, reviseEvery < 0 { throw ValidationError("--revise-every must be >= 0 seconds") }
        do {
            _ = try ArtCatalog(pieces: pieces)
        } catch {
            throw ValidationError("--pieces: \(error)")
        }
        if let cacheControl, cacheControl.contains(where: \.isNewline) {
            throw ValidationError("--cache-control must be one line")
        }
        let rates = [failureRate, truncateRate, corruptRate]
        guard rates.allSatisfy({ (0...1).contains($0) }), rates.reduce(0, +) <= 1 else {
            throw ValidationError("--failure-rate, --truncate-rate and --corrupt-rate must be in 0...1 and add up to at most 1")
        }
    }

    /// The configuration, with the signing key read (or created in the data directory).
    func galleryConfiguration() throws -> GalleryConfiguration {
        let key = try gallerySigningKey(signingKey)
        var configuration = GalleryConfiguration(
            host: server.host, port: server.port, seed: seed,
            faults: .init(
                latency: .milliseconds(latency), failureRate: failureRate, truncateRate: truncateRate,
                corruptRate: corruptRate, seed: faultSeed
            ),
            imageGate: holdImages ? ImageGate() : nil,
            signingKey: key, maxAge: maxAge, cacheControl: cacheControl,
            revisionInterval: reviseEvery.map { .seconds($0) }, catalog: try ArtCatalog(pieces: pieces),
            fastLane: server.fastLane
        )
        configuration.idleTimeout = server.idleTime
        (configuration.requestTimeout, configuration.maxConnections) = (server.requestTime, server.connectionCap())
        configuration.publicOrigin = try publicOrigin.map { try galleryOrigin($0, option: "--public-origin") }
        return configuration
    }

    func run() async throws {
        let logger = Logger(label: "gallery")
        let configuration = try galleryConfiguration()
        let app = try await Gallery.buildApplication(configuration, logger: logger) { port in
            say("gallery: serving \(URL.origin(host: server.host, port: port))/gallery/images, signed with key \(configuration.keyFingerprint)")
        }
        try await runReportingBindErrors(port: configuration.port) { try await app.runService() }
    }
}

/// The gallery's signing key: from `file` when given, else from the data directory; made where
/// it does not exist yet (and said so), which is how a key is rotated.
/// - Throws: ``CommandFailure`` with the key file's own message.
func gallerySigningKey(_ file: String?) throws -> SigningKey {
    do {
        // A file that does not exist yet is made, as the default one is: how a key is rotated.
        let path = file.map { URL(fileURLWithPath: $0) } ?? SigningKeyFile.defaultPath
        let (key, created) = try SigningKeyFile.readOrCreate(path)
        if created {
            say("gallery: made a new signing key in \(path.path) (\(key.fingerprint)): apps that trust another key for this "
                + "gallery refuse its feed until `emojiart trust --gallery URL`; if you meant an existing key, check the path")
        }
        return key
    } catch {
        throw CommandFailure("\(error)")
    }
}

/// Runs a server, turning "address in use" into a message that says what to do: pass `option`
/// with another port.
func runReportingBindErrors(port: Int, option: String = "--port", _ serve: () async throws -> Void) async throws {
    do {
        try await serve()
    } catch let error as IOError where error.errnoCode == EADDRINUSE {
        throw CommandFailure("port \(port) is already in use: pass \(option) with another port (0 picks a free one)")
    }
}

