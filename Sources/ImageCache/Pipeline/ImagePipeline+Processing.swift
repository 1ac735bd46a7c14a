import Foundation
import HTTPCaching
import Synchronization

/// Verifying fetched bytes and running processors: where the CPU work of a flight runs.
extension ImagePipeline {
    /// Payloads at least this big are hashed on the processing threads, within the processing
    /// limit: SHA-256 of 1 MiB takes milliseconds, too long for a cooperative thread.
    static let largePayload = 1 << 20

    /// ``verified(_:request:)`` on the processing threads for a large payload, here otherwise.
    func verified(_ image: Image, request: ImageRequest, flight id: FlightID) async throws -> Image {
        guard image.data.count >= Self.largePayload else {
            return try Self.verified(image, request: request)
        }
        return try await run(.processing, for: id) {
            try await processingPool.run { try Self.verified(image, request: request) }
        }
    }

    /// Whether `image`'s bytes have the SHA-256 `digest`: on the processing threads for a large
    /// payload, here otherwise.
    func hasBytes(_ image: Image, digest: String, flight id: FlightID) async throws -> Bool {
        guard image.data.count >= Self.largePayload else { return SHA256Hex.digest(image.data) == digest }
        return try await run(.processing, for: id) {
            try await processingPool.run { SHA256Hex.digest(image.data) == digest }
        }
    }

    /// Runs `operation` with the processing threads as its executor, so the synchronous work
    /// inside it blocks one of them and never one of Swift's cooperative threads.
    func onProcessingThreads<T>(_ operation: () async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(processingPool) { try await operation() }
    }

    /// Checks fetched bytes against the request's expected SHA-256 (the feed's checksum), and
    /// records their digest as ``Image/originalSHA256``.
    static func verified(_ image: Image, request: ImageRequest) throws(ImagePipeline.Error) -> Image {
        let actual = SHA256Hex.digest(image.data)
        if let expected = request.expectedSHA256, actual != expected {
            throw .checksumMismatch(expected: expected, actual: actual, url: request.url.absoluteString)
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
