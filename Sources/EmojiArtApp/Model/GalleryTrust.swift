/// Which gallery keys this app accepts for a feed.
public enum GalleryTrust: Sendable {
    /// Only the key with this fingerprint (`--gallery-key`); `store` remembers the newest
    /// signature accepted from it, so an older one cannot be replayed.
    case pinned(fingerprint: String, store: TrustStore = TrustStore())
    /// The key remembered for the gallery, or, at first contact, the gallery's own key, which
    /// is then remembered (trust on first use, as SSH does).
    case firstUse(TrustStore)

    /// Trust on first use with the shared trust file.
    public static var `default`: GalleryTrust { .firstUse(TrustStore()) }

    /// The trust file: the remembered keys, and the newest signature accepted from each key.
    public var store: TrustStore {
        switch self {
        case let .pinned(_, store), let .firstUse(store): store
        }
    }
}
