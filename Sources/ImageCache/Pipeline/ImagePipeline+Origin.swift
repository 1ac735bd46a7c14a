import Foundation
import HTTPCaching

/// Stages 2 and 3: the origin, and a variant made from its original.
extension ImagePipeline {
    /// Asks the origin within the download limits (in total and per host), conditionally on a
    /// stale entry's validators, and checks the bytes against the SHA-256 the feed expects.
    /// - Parameter staleSource: where `stale` was stored: a 304 answers with that source.
    func origin(
        _ request: ImageRequest, stale: Image?, staleSource: ImageResponse.Source, flight id: FlightID, outcome: inout [LiveCounter]
    ) async throws -> ImageResponse {
        // Stored bytes other than the ones the request expects are asked for whole: a 304 would
        // vouch only for the validators, and the bytes kept beside them may not be the ones the
        // origin sent.
        var validators = stale?.cacheHeaders.flatMap { $0.hasValidators ? $0 : nil }
        if let expected = request.expectedSHA256, let held = stale?.originalSHA256, held != expected { validators = nil }
        let origin = request.url.originKey
        // An origin nobody could connect to a moment ago is not asked again yet (one memory of
        // failures, the machine's, for keys and origins alike): not queued for, and, found so
        // while this waited for its slot, not asked either.
        if let refusal = unreachableRefusal(origin, url: request.url.absoluteString) { throw refusal }
        let fetched: (OriginResponse, Date, Date)
        do {
            fetched = try await inSlot(.download, for: id, host: origin) { [io, validators] in
                if let refusal = self.unreachableRefusal(origin, url: request.url.absoluteString) { throw refusal }
                return try await io.fetch(request, revalidating: validators)
            }
        } catch let error as ImagePipeline.Error {
            if case .originUnreachable = error {
                let now = clock.now
                machine.rememberUnreachable(
                    origin, RememberedFailure(error: error, expectedSHA256: nil), until: now + io.configuration.unreachableOriginExpiry, now: now)
            }
            throw error
        }
        machine.forgetUnreachable(origin)
        let (response, requestTime, responseTime) = fetched
        var image: Image
        switch response {
        case .missing(let status, var headers):
            io.counters.missingAnswers.increment()
            (headers.requestTime, headers.responseTime) = (requestTime, responseTime)
            // Remembered on disk for the answer's lifetime (RFC 9111 allows storing a 404).
            if !headers.cacheControl.noStore {
                await storeMissing(status: status, headers: headers, for: request, flight: id)
            }
            throw ImagePipeline.Error.httpStatus(status, url: request.url.absoluteString)
        case var .notModified(headers):
            guard let stale, validators != nil else {
                io.counters.errorAnswers.increment()
                throw ImagePipeline.Error.httpStatus(304, url: request.url.absoluteString)
            }
            outcome.append(io.counters.revalidations)
            (headers.requestTime, headers.responseTime) = (requestTime, responseTime)
            image = stale
            image.cacheHeaders = headers
            // Validators go only with the bytes the request expects (above); checked here too, so
            // a 304 can never vouch for other bytes.
            if let expected = request.expectedSHA256, let digest = image.originalSHA256, digest != expected {
                throw ImagePipeline.Error.checksumMismatch(expected: expected, actual: digest, url: request.url.absoluteString)
            }
            if let digest = image.originalSHA256 { io.memory.rememberOriginal(digest, forKey: request.cacheKey) }
            return ImageResponse(image: image, source: staleSource, isRevalidated: true)
        case let .fetched(fetched):
            io.counters.downloads.increment()
            if stale != nil { outcome.append(io.counters.refreshed) }
            image = try await io.verified(fetched, request: request)
            if image.cacheHeaders != nil { (image.cacheHeaders!.requestTime, image.cacheHeaders!.responseTime) = (requestTime, responseTime) }
        }
        if let digest = image.originalSHA256 {
            io.memory.rememberOriginal(digest, forKey: request.cacheKey)
        }
        return ImageResponse(image: image, source: .network)
    }

    /// The error for a request to `origin` while it is remembered unreachable, saying why and for
    /// how long more; `nil` when it may be asked.
    func unreachableRefusal(_ origin: String, url: String) -> ImagePipeline.Error? {
        guard let (remembered, until) = machine.unreachable(origin, now: clock.now) else { return nil }
        let reason: String
        if case let .originUnreachable(_, why) = remembered.error {
            reason = "\(why); not asking \(origin) again for \((until - clock.now).formatted(.units(allowed: [.seconds, .milliseconds])))"
        } else {
            reason = "not asking \(origin) again yet"
        }
        return .originUnreachable(url: url, reason: reason)
    }

    /// Makes a variant from its original, which is a request of its own (fetched once, and read
    /// from disk once, however many variants ask), at this flight's priority.
    func variant(
        _ request: ImageRequest, processor: any ImageProcessing, stale: Image?, flight id: FlightID, as work: Caller
    ) async throws -> ImageResponse {
        // The original is the engine's own look-up, not an answer to a caller: no hit counted.
        let lookup = Caller(asker: work.asker, countsHits: false, wantsMemory: work.wantsMemory)
        // Looked on the actor, in the turn that starts its flight: nothing can change in between.
        let generation = io.memory.generation
        let original: ImageResponse
        switch io.lookInMemory(request.original, countingHit: false) {
        case let .hit(image, refresh):
            if refresh { refreshInBackground(request.original) }
            original = ImageResponse(image: image, source: .memory)
        case let .stale(entry):
            original = try await load(request.original, stale: entry, lookedAt: generation, as: lookup)
        case .miss:
            original = try await load(request.original, stale: nil, lookedAt: generation, as: lookup)
        }
        var image: Image
        if let stale, let source = stale.originalSHA256, source == original.image.originalSHA256 {
            image = stale
        } else {
            // The original's bytes count as waiting until the variant is made: downloads pause
            // while too many wait.
            image = try await holdingOriginal(bytes: original.image.byteCount) {
                try await inSlot(.processing, for: id) { [io] in try await io.process(original.image, with: processor) }
            }
        }
        image.cacheHeaders = original.image.cacheHeaders
        image.originalSHA256 = original.image.originalSHA256
        return ImageResponse(image: image, source: .processed)
    }
}
