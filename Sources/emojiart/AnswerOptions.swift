public import ArgumentParser
public import EmojiArtApp

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

    @Option(help: ArgumentHelp("The image formats offered, comma-separated, png included: each image answer is the smallest the request's Accept names (AVIF, then WebP), else PNG. A format slow to make (AVIF, WebP) not made yet is answered with the best accepted format already made, else a PNG, while it is made in the background.", valueName: "list"))
    var formats = "avif,webp,png"

    @Option(help: ArgumentHelp("Once the feed is authenticated, make each verified piece's thumbnail in every offered format at 1x and 2x ahead, the feed's first pieces first, at background priority, up to this many MiB (0: none, and a first request of a slow format gets a stand-in). A new feed edition starts again; /stats and the toolbar show the progress.", valueName: "MiB"))
    var warmUpBudget = 32

    @Option(help: ArgumentHelp("The most megapixels of originals the warm-up decodes for one feed edition (each original's read from its header first, counted once for all its variants); it stops there. An original over 16 megapixels is never decoded by the warm-up.", valueName: "megapixels"))
    var warmUpMegapixels = 64

    /// ``formats`` parsed (``validate()`` has checked it).
    var servedFormats: [ServedFormat] { (try? ServedFormat.list(formats)) ?? ServedFormat.allCases }

    func validate() throws {
        guard (0...1_048_576).contains(warmUpBudget) else { throw ValidationError("--warm-up-budget must be 0 to 1048576 MiB, got \(warmUpBudget)") }
        guard (0...1_000_000).contains(warmUpMegapixels) else { throw ValidationError("--warm-up-megapixels must be 0 to 1000000, got \(warmUpMegapixels)") }
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
