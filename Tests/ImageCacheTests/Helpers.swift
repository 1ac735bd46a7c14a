import Foundation
import ImageCache
import Synchronization

/// A cheap, real processor: reverses the bytes and counts its calls. Lets the cache be tested
/// without libvips.
final class ByteReversingProcessor: ImageProcessing {
    let identifier: String
    private let calls = Mutex(0)
    var callCount: Int { calls.withLock { $0 } }

    init(identifier: String = "reverse") { self.identifier = identifier }

    func process(_ image: Image) async throws -> Image {
        calls.withLock { $0 += 1 }
        return Image(data: image.data.reversed(), contentType: image.contentType, pixelSize: .init(width: 1, height: image.data.count))
    }
}

/// A processor that always fails, as an undecodable image would.
struct FailingProcessor: ImageProcessing {
    let identifier = "failing"
    struct Undecodable: Error {}
    func process(_ image: Image) async throws -> Image { throw Undecodable() }
}

/// A fetcher that holds every download until the test opens its gate, and records
/// cancellations: the cancellation of an in-flight download is hard to observe on a real server.
final class GatedFetcher: ImageFetching {
    private let state = Mutex((started: 0, cancelled: 0, open: false))
    var started: Int { state.withLock { $0.started } }
    var cancelled: Int { state.withLock { $0.cancelled } }

    /// Lets every held download finish.
    func open() { state.withLock { $0.open = true } }

    func fetch(_ request: ImageRequest) async throws -> Image {
        state.withLock { $0.started += 1 }
        do {
            while !state.withLock({ $0.open }) { try await Task.sleep(for: .milliseconds(5)) }
        } catch {
            state.withLock { $0.cancelled += 1 }
            throw error
        }
        return Image(data: Array(request.url.absoluteString.utf8), contentType: "image/png")
    }
}

/// Deterministic image-like payloads of a given size.
func payload(_ seed: Int, size: Int = 30_000) -> [UInt8] {
    (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7) }
}

/// Waits until `condition` holds, polling; fails after `timeout`.
func eventually(timeout: Duration = .seconds(10), _ condition: () async -> Bool) async throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if await condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}
