/// How the app's image answers (`/thumbs/N`, `/large/N`) may be cached by browsers and proxies.
/// Every image answer carries a strong `ETag` (the SHA-256 of its bytes) and answers a matching
/// `If-None-Match` with 304 and no body, in every mode. Pages and JSON stay `no-store`.
public enum HTTPCacheMode: String, Sendable, CaseIterable, CustomStringConvertible {
    /// `Cache-Control: no-cache`: the browser asks every time and gets a 304 when nothing
    /// changed, so the toolbar's counters show what the app's caches did with no bytes resent.
    /// The default. Behind an nginx `proxy_cache` such answers are passed through, not cached.
    case revalidate
    /// Pages link content-addressed URLs (`/thumbs/17?v=<hash of the original's checksum and
    /// the variant>`), served with `Cache-Control: public, max-age=31536000, immutable`: for an
    /// edge cache or a CDN in front. A `v=` that is no longer current is redirected (307) to the
    /// current URL; a URL without `v=` is answered as in ``revalidate``.
    case immutable
    /// `Cache-Control: no-store`: no cache keeps the answers (the first edition's behaviour).
    case noStore = "no-store"

    public var description: String { rawValue }
}
