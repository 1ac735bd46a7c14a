public import AsyncHTTPClient
public import Foundation
public import ImageCache
public import MessageSignatures
import NIOCore
import NIOHTTP1

/// Authenticates the gallery's feed as it arrives, before any entry is used: the signature's key
/// (pinned, remembered, or learnt on first use), its lifetime, the signature over the status,
/// type and digest, and the digest over the body's bytes.
struct FeedAuthenticator: Sendable {
    let galleryURL: URL
    let trust: GalleryTrust
    let client: HTTPClient
    let now: @Sendable () -> Date

    /// A feed that passed.
    struct Outcome: Sendable, Hashable {
        /// The fingerprint of the key it was verified with.
        let fingerprint: String
        /// Whether that key was trusted just now, on first contact.
        let trustedOnFirstUse: Bool
    }

    /// The fingerprint of the key a feed of this gallery must be signed with now, when one is
    /// known (pinned, or remembered from an earlier contact).
    func trustedFingerprint() -> String? {
        switch trust {
        case let .pinned(fingerprint): fingerprint
        case let .firstUse(store): (try? store.key(for: galleryURL))?.thumbprint
        }
    }

    /// Checks a feed response; on first contact with a gallery (and no pin), remembers its key
    /// once the feed verified with it.
    func authenticate(status: Int, headers: HTTPHeaders, body: ByteBuffer) async throws(SignatureFailure) -> Outcome {
        let field: (String) -> String? = { name in
            let values = headers[name]
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }
        let received = try MessageSignature.received(field: field)
        let key: JSONWebKey
        var firstUse: TrustStore?
        switch trust {
        case let .pinned(fingerprint):
            guard received.keyID == fingerprint else { throw .unknownKey(expected: fingerprint, offered: received.keyID) }
            key = try await publishedKey()
            guard key.thumbprint == fingerprint else { throw .unknownKey(expected: fingerprint, offered: key.thumbprint) }
        case let .firstUse(store):
            let trusted: JSONWebKey?
            do {
                trusted = try store.key(for: galleryURL)
            } catch {
                throw .keyUnavailable(error.description)
            }
            if let trusted {
                guard trusted.thumbprint == received.keyID else {
                    throw .changedKey(trusted: trusted.thumbprint, offered: received.keyID)
                }
                key = trusted
            } else {
                key = try await publishedKey()
                guard key.thumbprint == received.keyID else { throw .unknownKey(expected: key.thumbprint, offered: received.keyID) }
                firstUse = store
            }
        }
        try MessageSignature.verify(received, status: status, field: field, key: key.publicKey(), now: now())
        try ContentDigest.verify(field("content-digest"), body: body.readableBytesView)
        if let store = firstUse {
            do {
                try store.trust(key, for: galleryURL)
            } catch {
                throw .keyUnavailable(error.description)
            }
        }
        return Outcome(fingerprint: key.thumbprint, trustedOnFirstUse: firstUse != nil)
    }

    /// `GET /gallery/key`: the gallery's public key as it publishes it.
    func publishedKey() async throws(SignatureFailure) -> JSONWebKey {
        try await GalleryKeys.published(by: galleryURL, client: client)
    }
}

/// The keys galleries publish.
public enum GalleryKeys {
    /// `GET /gallery/key` of the gallery at `galleryURL`: its public key as a JSON Web Key.
    /// - Throws: ``SignatureFailure/keyUnavailable(_:)``.
    public static func published(
        by galleryURL: URL, client: HTTPClient = HTTPImageFetcher.defaultClient
    ) async throws(SignatureFailure) -> JSONWebKey {
        let url = galleryURL.appendingPathComponent("gallery/key").absoluteString
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(15))
            guard response.status == .ok else { throw SignatureFailure.keyUnavailable("\(url) answered HTTP \(response.status.code)") }
            let body = try await response.body.collect(upTo: 64 * 1024)
            let key = try JSONDecoder().decode(JSONWebKey.self, from: Data(body.readableBytesView))
            _ = try key.publicKey()
            return key
        } catch let failure as SignatureFailure {
            throw failure
        } catch {
            throw .keyUnavailable("\(url): \(error)")
        }
    }
}
