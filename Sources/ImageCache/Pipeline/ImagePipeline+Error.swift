import Foundation
import Logging

/// Everything that can go wrong loading or caching an image.
extension ImagePipeline {
    /// The ImageCache module's error; cases carry what is needed to act on them.
    public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
        // Hashable by description: a processor's own error need not be.
        /// A path or URL that cannot be turned into a request.
        case invalidURL(String)
        /// An expected SHA-256 that is not 64 hex digits (with or without `sha256:`): refused
        /// before anything is asked, and not remembered.
        case invalidDigest(String)
        /// The origin answered with a non-2xx status.
        case httpStatus(Int, url: String)
        /// No complete answer within the timeout.
        case timeout(url: String, seconds: Double)
        /// No connection to the origin could be made (refused, or none within the connect
        /// timeout). The pipeline does not ask that origin again for
        /// ``ImagePipeline/Configuration/unreachableOriginExpiry``: its requests meanwhile fail at
        /// once with this error, and a stale entry answers them where HTTP allows.
        case originUnreachable(url: String, reason: String)
        /// The connection broke, or failed otherwise, before the answer was complete.
        case connectionFailed(url: String, reason: String)
        /// The body was larger than the limit; the download was stopped at the limit.
        case bodyTooLarge(limit: Int, url: String)
        /// The bytes do not hash to the SHA-256 the request expected; nothing was cached.
        case checksumMismatch(expected: String, actual: String, url: String)
        /// The origin answered with bytes that begin as no image format the cache knows (PNG,
        /// JPEG, GIF, WebP, AVIF, HEIF, JPEG XL, TIFF, BMP, ICO, SVG): a text file, an HTML page, an
        /// error body. Refused before anything is answered or cached, and remembered as a
        /// permanent failure. A request that wants other bytes says so with
        /// ``ImageRequest/acceptsAnyData``.
        case notAnImage(url: String, contentType: String)
        /// The processor failed, for example on an undecodable image; `underlying` is the
        /// processor's own error.
        case processingFailed(processor: String, underlying: any Swift.Error & Sendable)
        /// A disk entry failed its integrity check; it was deleted.
        case corruptEntry(file: String, reason: String)
        /// A disk operation failed (unwritable directory, full disk).
        case diskFailure(path: String, reason: String)
        /// The request's cache policy forbids loading (``CachePolicy/returnCacheDataDontLoad``,
        /// offline) and the cache has no entry for it.
        case notCached(url: String)
        /// More work than the pipeline takes: the queue of `stage` was full and this background
        /// work (a prefetch, a refresh) was refused (`waited` is `nil`), or this work waited
        /// `waited` for a slot beyond the queue's capacity. Nothing is remembered: ask again.
        case tooBusy(stage: String, waited: Duration?)

        /// Whether the origin could not be reached at all (refused, reset, timed out), as opposed
        /// to answering with an error: a stale entry may then be answered (RFC 9111 4.2.4).
        public var isOriginUnreachable: Bool {
            switch self {
            case .timeout, .connectionFailed, .originUnreachable: true
            default: false
            }
        }

        /// True when trying again soon may succeed: 5xx, 408, 429, timeouts, broken connections.
        /// Such failures are remembered for ``ImagePipeline/Configuration/transientFailureExpiry``,
        /// the others for ``ImagePipeline/Configuration/permanentFailureExpiry``.
        public var isTransient: Bool {
            switch self {
            case let .httpStatus(status, _): status >= 500 || status == 408 || status == 429
            case .timeout, .connectionFailed, .originUnreachable, .diskFailure, .corruptEntry, .notCached, .tooBusy: true
            case .invalidURL, .invalidDigest, .bodyTooLarge, .checksumMismatch, .notAnImage, .processingFailed: false
            }
        }

        public var description: String {
            switch self {
            case let .invalidURL(url):
                "invalid image URL \(url): pass an absolute http(s) URL or configure a base URL"
            case let .httpStatus(status, url):
                status == 404 || status == 410
                    ? "\(url) answered \(status): the image does not exist on the server"
                    : "\(url) answered HTTP \(status): \(status >= 500 ? "the server failed, try again later" : "the request was refused")"
            case let .timeout(url, seconds):
                "\(url) did not answer within \(seconds) s: is the server up? try again or raise the timeout"
            case let .originUnreachable(url, reason):
                "cannot connect for \(url) (\(reason)): check that the server is running and reachable"
            case let .connectionFailed(url, reason):
                "cannot load \(url) (\(reason)): check that the server is running and reachable"
            case let .bodyTooLarge(limit, url):
                "\(url) sent more than \(limit) bytes: the download was stopped; raise the body limit if the image is genuine"
            case let .checksumMismatch(expected, actual, url):
                "\(url) sent bytes with SHA-256 \(actual), expected \(expected): the image is not the one the feed lists; it was not cached"
            case let .notAnImage(url, contentType):
                "\(url) answered bytes that are no image (\(contentType.prefix(80)); not PNG, JPEG, GIF, WebP, AVIF, HEIF, JPEG XL, TIFF, BMP, ICO or SVG): nothing was cached; check the URL, or set ImageRequest.acceptsAnyData to load other data"
            case let .processingFailed(processor, underlying):
                "processing \(processor) failed: \(underlying)"
            case let .invalidDigest(digest):
                "expected SHA-256 \(digest.prefix(80)) is not 64 hex digits: pass the feed's checksum as sha256:<hex> or nothing"
            case let .corruptEntry(file, reason):
                "cache entry \(file) is corrupt (\(reason)): it was deleted and will be fetched again"
            case let .notCached(url):
                "\(url) is not in the cache and loading is off (offline): load it once online first"
            case let .tooBusy(stage, nil):
                "the \(stage) queue is full and this background work (a prefetch or a refresh) was refused: it runs when asked again"
            case let .tooBusy(stage, waited?):
                "too many images are being prepared; try again (waited \(waited.formatted(.units(allowed: [.seconds, .milliseconds]))) for a \(stage) slot)"
            case let .diskFailure(path, reason):
                "disk cache at \(path) failed (\(reason)): images still load from memory and network; check free space and permissions or pass another cache directory"
            }
        }
    
        public static func == (lhs: Error, rhs: Error) -> Bool {
            lhs.description == rhs.description
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(description)
        }

        /// How loud a remembered failure is logged: bytes or a request that can never succeed
        /// as they are (a checksum mismatch, an undecodable image, too large, an invalid URL) are
        /// a warning; what the origin said or could not say is a notice, but for 404 and 410,
        /// an answer about the image rather than a fault (debug).
        var logLevel: Logger.Level {
            switch self {
            case .checksumMismatch, .notAnImage, .processingFailed, .bodyTooLarge, .invalidURL, .invalidDigest: .warning
            case .httpStatus(404, _), .httpStatus(410, _): .debug
            default: .notice
            }
        }
    }
}
