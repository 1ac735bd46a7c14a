import Foundation
import HTTPCaching
import Synchronization

/// Freshness: whether an entry found in memory or on disk is answered, refreshed or revalidated.
extension ImagePipeline {
    /// What to do with an entry found in memory or on disk.
    enum Lookup: Equatable {
        /// Answer it.
        case answer
        /// Answer it, stale, and refresh it in the background.
        case answerAndRefresh
        /// Revalidate it with the origin first.
        case revalidate
        /// Do not use it: a variant made from other bytes than its original has now.
        case miss
    }

    /// Decides by the request's policy, the entry's headers and the wall clock.
    /// - Parameter knownOriginal: for a variant found in memory, the SHA-256 of its original as
    ///   this process last saw it, read with the entry (`MemoryCache.touch(_:original:)`);
    ///   otherwise it is looked up here.
    func lookup(_ entry: Image, for request: ImageRequest, knownOriginal: String?? = .none) -> Lookup {
        // The headers are read in place (see Image.freshness(at:)): this runs on every hit.
        let source = entry.originalSHA256
        // Not from HTTP and nothing known of its bytes (stored by hand, a custom fetcher's):
        // answered unless the request reloads.
        if source == nil, !entry.hasCacheHeaders {
            switch request.cachePolicy {
            case .reloadIgnoringCacheData: return .miss
            case .reloadRevalidatingCacheData: return .revalidate
            default: return .answer
            }
        }
        if let source {
            if request.processor != nil {
                if let expected = request.expectedSHA256, expected != source { return .miss }
                let key = request.originalCacheKey
                if let known = knownOriginal ?? memory.original(forKey: key), known != source { return .miss }
            } else if let expected = request.expectedSHA256, expected != source {
                // Not the bytes the request expects (the feed lists others now, or they were
                // planted with a digest of their own): the whole image from the origin, or, when
                // nothing may be loaded, not cached. Never answered, fresh or not.
                return request.cachePolicy.allowsLoading ? .revalidate : .miss
            }
        }
        switch request.cachePolicy {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
            return .answer
        case .reloadIgnoringCacheData:
            return .miss
        case .reloadRevalidatingCacheData:
            guard entry.isImmutable else { return .revalidate }
            return entry.freshness(at: now())?.state == .fresh ? .answer : .revalidate
        case .useProtocolCachePolicy:
            guard let freshness = entry.freshness(at: now()) else { return .answer }  // not from HTTP
            switch freshness.state {
            case .fresh: return .answer
            case .staleWhileRevalidate: return .answerAndRefresh
            case .stale, .mustRevalidate: return .revalidate
            }
        }
    }

    /// Whether `stale` may answer `request` because revalidating it failed with `error`: only
    /// for failures of the origin (5xx, unreachable), as its headers allow, and never when its
    /// bytes are not the ones the request expects (a down origin vouches for nothing).
    func allowsStaleAnswer(_ stale: Image, for request: ImageRequest, after error: ImagePipeline.Error) -> Bool {
        if let expected = request.expectedSHA256, let held = stale.originalSHA256, held != expected { return false }
        switch error {
        case let .httpStatus(status, _) where status >= 500: break
        case .timeout, .connectionFailed: break
        default: return false
        }
        guard let headers = stale.cacheHeaders else { return true }
        return headers.freshness(at: now()).allowsStaleAnswer(originUnreachable: error.isOriginUnreachable)
    }

    /// Counts a stale answer and, inside `stale-while-revalidate`, starts one refresh.
    func answeredStale(_ entry: Image, for request: ImageRequest, refreshing: Bool) {
        counters.staleAnswers.increment()
        guard refreshing, request.cachePolicy.allowsLoading else { return }
        var refresh = request
        refresh.cachePolicy = .reloadRevalidatingCacheData
        refresh.retryingFailures = false
        refresh.priority = .veryLow  // background work: after everything a caller waits for
        // Every refresh of a key shares one flight (see flightKey), so answers that overlap
        // cause one revalidation.
        Task { _ = try? await self.image(for: refresh) }
    }
}
