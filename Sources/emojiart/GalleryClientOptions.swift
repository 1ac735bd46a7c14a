import ArgumentParser
import EmojiArtApp
import Foundation
import HTTPCaching

/// `--gallery` and `--concurrency`, shared by the commands that load a gallery.
struct GalleryClientOptions: ParsableArguments {
    @Option(help: "The gallery's base URL, e.g. http://127.0.0.1:8081 from `emojiart gallery --port 8081`.")
    var gallery: String

    @Option(help: "Images verified at once.")
    var concurrency: Int = 8

    @Option(help: ArgumentHelp("Accept only a feed signed with this key (its fingerprint, as the gallery prints it). Without it, the key the gallery shows at first contact is trusted from then on. Write --gallery-key=FINGERPRINT: a fingerprint may start with '-'.", valueName: "fingerprint"))
    var galleryKey: String?

    @Option(help: ArgumentHelp("The gallery's own origin, as its signed feed names it: a feed naming another is refused (wrong_gallery). Default: the origin of --gallery; give it when --gallery is a proxy in front of the gallery.", valueName: "url"))
    var galleryOrigin: String?

    @Flag(help: "Never touch the network: the feed and every image come from the cache, and the images it does not hold are reported as not cached.")
    var offline = false

    /// The trust the options ask for.
    var trust: GalleryTrust { galleryKey.map { .pinned(fingerprint: $0) } ?? .default }

    func validate() throws {
        guard let url = URL(string: gallery), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("--gallery must be an http(s) URL, got \(gallery)")
        }
        if let galleryOrigin { _ = try emojiart.galleryOrigin(galleryOrigin, option: "--gallery-origin") }
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        // An RFC 7638 thumbprint: the base64url of a SHA-256, 43 characters. An empty one (an unset
        // variable in a unit file) must not quietly fall back to trust on first use.
        if let galleryKey, galleryKey.utf8.count != 43 || !galleryKey.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0) }) {
            throw ValidationError("--gallery-key must be a key fingerprint as the gallery prints it (43 characters of base64url), got '\(galleryKey)'")
        }
    }

    var galleryURL: URL { URL(string: gallery)! }

    /// The origin the gallery's feed must name: `--gallery-origin`, else the origin of `--gallery`.
    var expectedOrigin: String {
        galleryOrigin.flatMap { try? emojiart.galleryOrigin($0, option: "--gallery-origin") } ?? galleryURL.originKey
    }
}

/// `text` as an origin is compared (`scheme://host:port`, see `URL.originKey`), when it is an
/// http(s) URL with a host and nothing after it.
/// - Throws: `ValidationError` naming `option` and what is wrong.
func galleryOrigin(_ text: String, option: String) throws -> String {
    guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", let host = url.host, !host.isEmpty,
          url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil, url.user == nil
    else {
        throw ValidationError("\(option) must be an origin, http(s)://host[:port] with no path, got \(text)")
    }
    return url.originKey
}
