import ArgumentParser
import AsyncHTTPClient
import EmojiArtApp
import Foundation
import ImageCache
import MessageSignatures

/// `emojiart trust`: accept a gallery's current signing key, after a key rotation.
struct TrustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Trust a gallery's current signing key from now on (after the gallery rotated its key).",
        discussion: """
            Fetches the gallery's public key (GET /gallery/key), prints its fingerprint and stores it in the trust file, \
            $XDG_DATA_HOME/emojiart/trusted-galleries.json (default ~/.local/share/emojiart/), shared by every app and \
            sync on this machine. With --key, the key is trusted only if its fingerprint is the one given: compare it \
            with the one the gallery printed at start.
            """
    )

    @Option(help: "The gallery's base URL, e.g. http://127.0.0.1:8081.")
    var gallery: String

    @Option(help: ArgumentHelp("Trust the key only if its fingerprint is this one. Write --key=FINGERPRINT: a fingerprint may start with '-'.", valueName: "fingerprint"))
    var key: String?

    func validate() throws {
        guard let url = URL(string: gallery), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("--gallery must be an http(s) URL, got \(gallery)")
        }
    }

    func run() async throws {
        let galleryURL = URL(string: gallery)!
        let store = TrustStore()
        do {
            let published = try await GalleryKeys.published(by: galleryURL)
            if let key, key != published.thumbprint {
                throw CommandFailure("the gallery's key is \(published.thumbprint), not \(key): nothing was changed")
            }
            let before = try store.trust(published, for: galleryURL)
            switch before?.thumbprint {
            case nil: say("now trusting \(galleryURL.absoluteString) with key \(published.thumbprint)")
            case published.thumbprint?: say("already trusting \(galleryURL.absoluteString) with key \(published.thumbprint)")
            case let old?: say("now trusting \(galleryURL.absoluteString) with key \(published.thumbprint) (was \(old))")
            }
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}
