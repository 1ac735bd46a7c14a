public import ArgumentParser
public import EmojiArtApp
import Foundation
import Hummingbird
import ImageCache
import Logging
import HTTPCaching

/// `--cache-dir`, shared by the commands that use the cache.
struct CacheOptions: ParsableArguments {
    @Option(help: "Cache directory (default: $XDG_CACHE_HOME/emojiart or ~/.cache/emojiart).")
    var cacheDir: String?

    var directory: URL {
        cacheDir.map { URL(fileURLWithPath: $0) } ?? ImageDatabase.Configuration.defaultDirectory
    }

    func database() -> ImageDatabase {
        ImageDatabase(
            configuration: .init(directory: directory, loader: .init()),
            logger: Logger(label: "cache")
        )
    }
}

/// `emojiart app`: the web app against a running gallery.
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Serve the EmojiArt web app against a gallery.",
        discussion: "Loads the gallery's feed, verifies every image with a live progress bar, then shows the catalog. Images are cached by HTTP's rules (fresh ones cost no request, stale ones a conditional one); when the gallery is unreachable the cached catalog and images are shown and the page says so. Stops cleanly on Ctrl-C or SIGTERM."
    )

    @OptionGroup var client: GalleryClientOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var cache: CacheOptions
    @OptionGroup var answers: AnswerOptions

    func run() async throws {
        let configuration = AppConfiguration(
            host: server.host, port: server.port ?? 8080, galleryURL: client.galleryURL, concurrency: client.concurrency,
            trust: client.trust, offline: client.offline, httpCache: answers.httpCache, instanceName: answers.instanceName,
            fastLane: server.fastLane, compression: answers.compression, formats: answers.servedFormats,
            allowedHosts: answers.allowedHost
        )
        let app = try await EmojiArtApp.buildApplication(configuration, database: cache.database()) { port in
            say("EmojiArt: open \(URL.origin(host: server.host, port: port))/")
        }
        try await runReportingBindErrors(port: configuration.port) { try await app.runService() }
    }
}

/// `--http-cache`, `--instance-name` and `--allowed-host`, shared by the commands that serve the
/// web app.
struct AnswerOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "How browsers and proxies may cache image answers: revalidate (Cache-Control: no-cache; the browser asks every time and gets a 304, so the toolbar still counts), immutable (pages link /thumbs/N?v=HASH URLs served with max-age=31536000, immutable, for an edge cache or CDN; an outdated v= is redirected), or no-store. Every image answer has a strong ETag and answers If-None-Match with 304.",
        valueName: "mode"
    ))
    var httpCache: HTTPCacheMode = .revalidate

    @Option(help: ArgumentHelp("A name the toolbar shows: which instance a browser talks to when several run behind one address.", valueName: "name"))
    var instanceName: String?

    @Option(help: ArgumentHelp("A host name people reach the app by, besides the --host address and localhost (repeatable), e.g. the name of a proxy in front. A request whose Host names any other host is answered 421 Misdirected Request, so a page at a name rebound to this address can neither read nor change the app.", valueName: "name"))
    var allowedHost: [String] = []

    @Flag(inversion: .prefixedNo, help: "Compress pages, JSON, scripts and styles with gzip or deflate for clients that accept it (on by default; images never). --no-compression answers them as they are, to compare.")
    var compression = true

    @Option(help: ArgumentHelp("The image formats offered, comma-separated, png included: each image answer is the smallest the request's Accept names (AVIF, then WebP), else PNG. An AVIF not made yet is answered with the next format accepted while it is made in the background.", valueName: "list"))
    var formats = "avif,webp,png"

    /// ``formats`` parsed (``validate()`` has checked it).
    var servedFormats: [ServedFormat] { (try? ServedFormat.list(formats)) ?? ServedFormat.allCases }

    func validate() throws {
        do {
            _ = try ServedFormat.list(formats)
        } catch {
            throw ValidationError(error.description)
        }
        for name in allowedHost where !AppConfiguration.isValidHostName(name) {
            throw ValidationError("--allowed-host takes a host name or an IP address, without a scheme, port or path (e.g. emojiart.example), got \(name)")
        }
    }
}

extension HTTPCacheMode: ExpressibleByArgument {}

/// `--gallery` and `--concurrency`, shared by the commands that load a gallery.
struct GalleryClientOptions: ParsableArguments {
    @Option(help: "The gallery's base URL, e.g. http://127.0.0.1:8081 from `emojiart gallery --port 8081`.")
    var gallery: String

    @Option(help: "Images verified at once.")
    var concurrency: Int = 8

    @Option(help: ArgumentHelp("Accept only a feed signed with this key (its fingerprint, as the gallery prints it). Without it, the key the gallery shows at first contact is trusted from then on. Write --gallery-key=FINGERPRINT: a fingerprint may start with '-'.", valueName: "fingerprint"))
    var galleryKey: String?

    @Flag(help: "Never touch the network: the feed and every image come from the cache, and the images it does not hold are reported as not cached.")
    var offline = false

    /// The trust the options ask for.
    var trust: GalleryTrust { galleryKey.map { .pinned(fingerprint: $0) } ?? .default }

    func validate() throws {
        guard let url = URL(string: gallery), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("--gallery must be an http(s) URL, got \(gallery)")
        }
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        // An RFC 7638 thumbprint: the base64url of a SHA-256, 43 characters. An empty one (an unset
        // variable in a unit file) must not quietly fall back to trust on first use.
        if let galleryKey, galleryKey.utf8.count != 43 || !galleryKey.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0) }) {
            throw ValidationError("--gallery-key must be a key fingerprint as the gallery prints it (43 characters of base64url), got '\(galleryKey)'")
        }
    }

    var galleryURL: URL { URL(string: gallery)! }
}
