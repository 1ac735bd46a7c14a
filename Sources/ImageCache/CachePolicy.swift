#if canImport(FoundationNetworking)
public import FoundationNetworking
#else
public import Foundation
#endif

/// How one request uses the cache, as `URLRequest.CachePolicy` and Nuke's and Coil's options say
/// it: by HTTP's rules, from the cache whatever its age, from the origin whatever the cache
/// holds, or from the cache only.
public enum CachePolicy: Sendable, Hashable {
    /// RFC 9111 (the default): a fresh entry is answered without a request; a stale one is
    /// revalidated (`If-None-Match` / `If-Modified-Since`), or answered at once with a refresh in
    /// the background inside `stale-while-revalidate`, or answered when the origin fails inside
    /// `stale-if-error` or cannot be reached.
    case useProtocolCachePolicy
    /// Any entry is answered, however stale, and only a miss loads: offline first (the
    /// cache's behaviour before it knew HTTP freshness).
    case returnCacheDataElseLoad
    /// Always loads from the origin, unconditionally, and stores the answer.
    case reloadIgnoringCacheData
    /// Revalidates every entry with the origin, fresh or not, except a fresh one marked
    /// `immutable` (RFC 8246).
    case reloadRevalidatingCacheData
    /// Answers from the cache, however stale, and never loads: offline. A miss is
    /// ``ImagePipeline/Error/notCached(url:)``.
    case returnCacheDataDontLoad

    /// The policy of a `URLRequest`'s `cachePolicy`.
    public init(_ policy: URLRequest.CachePolicy) {
        switch policy {
        case .returnCacheDataElseLoad: self = .returnCacheDataElseLoad
        case .returnCacheDataDontLoad: self = .returnCacheDataDontLoad
        case .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData: self = .reloadIgnoringCacheData
        case .reloadRevalidatingCacheData: self = .reloadRevalidatingCacheData
        default: self = .useProtocolCachePolicy
        }
    }

    /// Whether a request under this policy may reach the origin.
    public var allowsLoading: Bool { self != .returnCacheDataDontLoad }
}
