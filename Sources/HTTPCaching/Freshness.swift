public import Foundation

/// How fresh a stored response is at one moment: RFC 9111 section 4.2 for a private cache, with
/// RFC 5861's `stale-while-revalidate` and `stale-if-error` windows.
///
/// ```
/// age      = max(apparent age, Age + response delay) + time since the response arrived   (4.2.3)
/// lifetime = max-age, else Expires - Date, else 10% of (Date - Last-Modified), at most
///            24 hours (the heuristic, 4.2.2), else 0                                      (4.2.1)
/// fresh    = lifetime > age, and no no-cache
/// ```
public struct Freshness: Sendable, Hashable {
    /// What a cache may do with the response.
    public enum State: Sendable, Hashable {
        /// Answer it without asking the origin.
        case fresh
        /// Stale, but inside `stale-while-revalidate`: answer it now and revalidate it in the
        /// background.
        case staleWhileRevalidate
        /// Stale: revalidate before answering; if the origin cannot be reached it may still be
        /// answered (see ``Freshness/allowsStaleAnswer(originUnreachable:)``).
        case stale
        /// `no-cache`, or stale with `must-revalidate`: only a successful revalidation makes it
        /// usable, and it is never answered stale.
        case mustRevalidate
    }

    /// Seconds the response stays fresh after it was generated.
    public var lifetime: TimeInterval
    /// The response's current age in seconds.
    public var age: TimeInterval
    /// Whether ``lifetime`` is the heuristic (the origin said nothing about freshness).
    public var isHeuristic: Bool
    /// The answer.
    public var state: State
    /// Seconds past ``lifetime`` during which a failed revalidation may be answered stale.
    public var staleIfError: TimeInterval
    /// Whether the response forbids stale answers (`no-cache` or `must-revalidate`).
    public var forbidsStale: Bool

    /// The heuristic's share of the time since `Last-Modified`.
    public static let heuristicFraction = 0.1
    /// The heuristic's ceiling, in seconds: 24 hours.
    public static let heuristicCap: TimeInterval = 86_400

    /// Evaluates `headers` at `now`.
    public init(_ headers: CacheHeaders, now: Date) {
        let control = headers.cacheControl
        let responseTime = headers.responseTime.timeIntervalSince1970
        let dateValue = headers.date?.timeIntervalSince1970 ?? responseTime
        // 4.2.3: the age.
        let apparentAge = max(0, responseTime - dateValue)
        let responseDelay = max(0, responseTime - headers.requestTime.timeIntervalSince1970)
        let correctedAgeValue = TimeInterval(headers.age ?? 0) + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now.timeIntervalSince1970 - responseTime)
        age = correctedInitialAge + residentTime
        // 4.2.1: the lifetime; a private cache ignores s-maxage.
        isHeuristic = false
        if let maxAge = control.maxAge {
            lifetime = TimeInterval(maxAge)
        } else if let expires = headers.expires {
            lifetime = max(0, expires.timeIntervalSince1970 - dateValue)
        } else if let lastModified = headers.lastModified {
            lifetime = min(Self.heuristicCap, max(0, (dateValue - lastModified.timeIntervalSince1970) * Self.heuristicFraction))
            isHeuristic = true
        } else {
            lifetime = 0
        }
        forbidsStale = control.noCache || control.mustRevalidate
        staleIfError = TimeInterval(control.staleIfError ?? 0)
        if control.noCache {
            state = .mustRevalidate
        } else if lifetime > age {
            state = .fresh
        } else if control.mustRevalidate {
            state = .mustRevalidate
        } else if let window = control.staleWhileRevalidate, age < lifetime + TimeInterval(window) {
            state = .staleWhileRevalidate
        } else {
            state = .stale
        }
    }

    /// Whether the response may be answered stale because revalidating it failed.
    ///
    /// Never when it forbids stale answers (`no-cache`, `must-revalidate`). When the origin
    /// cannot be reached at all (refused, timed out), yes: RFC 9111 4.2.4 lets a disconnected
    /// cache answer stale. When the origin answered with an error (5xx), only inside
    /// `stale-if-error` (RFC 5861 section 4).
    public func allowsStaleAnswer(originUnreachable: Bool) -> Bool {
        if state == .fresh { return true }
        if forbidsStale { return false }
        return originUnreachable || age < lifetime + staleIfError
    }
}
