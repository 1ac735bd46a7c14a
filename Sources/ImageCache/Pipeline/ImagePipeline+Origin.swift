import Foundation
import HTTPCaching

/// Stages 4 and 5 of a flight's work: the origin (conditional requests, what the answer is
/// counted as, the feed's checksum) and a variant made from its original.
extension ImagePipeline {
    /// The answer to a lookup of a known-missing key: the status the origin gave, counted.
    func knownMissing(_ status: Int, request: ImageRequest) -> ImagePipeline.Error {
        counters.knownMissing.increment()
        return .httpStatus(status, url: request.url.absoluteString)
    }

    /// Whether `error` is the origin failing (unreachable, or a 5xx), rather than answering.
    static func originFailed(_ error: ImagePipeline.Error) -> Bool {
        if case let .httpStatus(status, _) = error { return status >= 500 }
        return error.isOriginUnreachable
    }

    /// Counts what became of one origin request that threw: an answer that gave no image, or
    /// no answer at all.
    func countUnusable(_ error: any Swift.Error) {
        switch error {
        case let ImagePipeline.Error.httpStatus(status, _) where DiskEntry.missingStatuses.contains(status):
            counters.missingAnswers.increment()
        case ImagePipeline.Error.httpStatus, ImagePipeline.Error.bodyTooLarge:
            counters.errorAnswers.increment()
        default:
            counters.unanswered.increment()
        }
    }

    /// Stage 4: fetches an original, conditionally when a stale entry has validators and holds
    /// the bytes the request expects.
    /// - Parameter outcome: gets the counter of what the origin said to a conditional request.
    func origin(
        _ request: ImageRequest, stale: Image?, flight id: FlightID, outcome: inout [LiveCounter]
    ) async throws -> Image {
        // Stored bytes other than the ones the request expects are asked for whole: a 304 would
        // vouch only for the validators, and the bytes kept beside them may not be the ones the
        // origin sent (an entry planted with a digest of its own bytes was confirmed for ever,
        // and the origin blamed for a mismatch).
        var validators = stale?.cacheHeaders.flatMap { $0.hasValidators ? $0 : nil }
        if let expected = request.expectedSHA256, let held = stale?.originalSHA256, held != expected { validators = nil }
        let (response, requestTime, responseTime) = try await run(.download, for: id, host: request.url.originKey) {
            counters.originFetches.increment()
            let requestTime = now()
            let response: OriginResponse
            do {
                response = try await fetcher.fetch(request, revalidating: validators)
            } catch {
                countUnusable(error)
                throw error
            }
            return (response, requestTime, now())
        }
        var image: Image
        switch response {
        case .missing(let status, var headers):
            counters.missingAnswers.increment()
            (headers.requestTime, headers.responseTime) = (requestTime, responseTime)
            // 6. Remembered on disk for the answer's lifetime (RFC 9111 allows storing a 404).
            if !headers.cacheControl.noStore {
                await storeMissing(status: status, headers: headers, for: request, flight: id)
            }
            throw ImagePipeline.Error.httpStatus(status, url: request.url.absoluteString)
        case var .notModified(headers):
            guard let stale, validators != nil else {
                counters.errorAnswers.increment()
                throw ImagePipeline.Error.httpStatus(304, url: request.url.absoluteString)
            }
            outcome.append(counters.revalidations)
            (headers.requestTime, headers.responseTime) = (requestTime, responseTime)
            image = stale
            image.cacheHeaders = headers
            // Validators go only with the bytes the request expects (above); checked here too, so
            // a 304 can never vouch for other bytes.
            if let expected = request.expectedSHA256, let digest = image.originalSHA256, digest != expected {
                throw ImagePipeline.Error.checksumMismatch(expected: expected, actual: digest, url: request.url.absoluteString)
            }
        case let .fetched(fetched):
            counters.downloads.increment()
            if stale != nil { outcome.append(counters.refreshed) }
            image = try await verified(fetched, request: request, flight: id)
            if image.cacheHeaders != nil { (image.cacheHeaders!.requestTime, image.cacheHeaders!.responseTime) = (requestTime, responseTime) }
        }
        if let digest = image.originalSHA256 {
            memory.rememberOriginal(digest, forKey: request.cacheKey)
        }
        return image
    }

    /// Stage 5: a variant made from its original, or the stale variant kept when the original
    /// still has the bytes it was made from. Either way it takes the original's headers.
    func variant(
        _ request: ImageRequest, processor: any ImageProcessing, stale: Image?, flight id: FlightID,
        as work: Caller
    ) async throws -> Image {
        // The original's flight runs at this flight's priority, whoever else waits for it.
        let original = try await image(for: request.original, as: work)
        var image: Image
        if let stale, let source = stale.originalSHA256, source == original.originalSHA256 {
            image = stale
        } else {
            // The original's bytes count as waiting until the variant is made: downloads pause
            // while too many wait.
            image = try await holdingOriginal(bytes: original.data.count) {
                try await run(.processing, for: id) {
                    try await onProcessingThreads { try await Self.process(original, with: processor) }
                }
            }
        }
        image.cacheHeaders = original.cacheHeaders
        image.originalSHA256 = original.originalSHA256
        return image
    }
}
