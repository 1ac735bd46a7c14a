import Foundation
import HTTPCaching
import Synchronization

/// Verifying fetched bytes and running processors: where the CPU work of a flight runs.
extension ImagePipeline {
    /// Payloads at least this big are hashed on the processing threads, within the processing
    /// limit: SHA-256 of 1 MiB takes milliseconds, too long for a cooperative thread.
    static let largePayload = 1 << 20

    /// The SHA-256 of `image`'s bytes, as lowercase hex: on the processing threads, within the
    /// processing limit, for a large payload; here otherwise. Every hash of a flight's bytes (a
    /// download checked against the feed, an original read back from disk) runs through here.
    func digest(of image: Image, flight id: FlightID) async throws -> String {
        guard image.data.count >= Self.largePayload else { return SHA256Hex.digest(image.data) }
        return try await run(.processing, for: id) {
            try await processingPool.run { SHA256Hex.digest(image.data) }
        }
    }

    /// Runs `operation` with the processing threads as its executor, so the synchronous work
    /// inside it blocks one of them and never one of Swift's cooperative threads.
    func onProcessingThreads<T>(_ operation: () async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(processingPool) { try await operation() }
    }

    /// Checks fetched bytes against the request's expected SHA-256 (the feed's checksum), and
    /// records their digest as ``Image/originalSHA256``.
    func verified(_ image: Image, request: ImageRequest, flight id: FlightID) async throws -> Image {
        let actual = try await digest(of: image, flight: id)
        if let expected = request.expectedSHA256, actual != expected {
            throw ImagePipeline.Error.checksumMismatch(expected: expected, actual: actual, url: request.url.absoluteString)
        }
        var image = image
        image.originalSHA256 = actual
        return image
    }

    /// Runs a processor, wrapping its errors.
    static func process(_ image: Image, with processor: any ImageProcessing) async throws -> Image {
        do {
            return try await processor.process(image)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ImagePipeline.Error.processingFailed(processor: processor.identifier, reason: "\(error)")
        }
    }
}
