import Foundation
@testable import ImageCache
import Synchronization
import TestSupport

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

/// A fetcher that holds every download at a gate until the test opens it, and counts starts
/// and cancellations live: the cancellation of an in-flight download is hard to observe on a
/// real server.
final class GatedFetcher: ImageFetching {
    let gate = Gate()
    /// Downloads started so far, live.
    let started = LiveValue(0)
    /// Downloads cancelled while held, live.
    let cancelled = LiveValue(0)

    /// Lets every held download finish.
    func open() { gate.open() }

    func fetch(_ request: ImageRequest) async throws -> Image {
        started.update { $0 += 1 }
        do {
            try await gate.pass()
        } catch {
            cancelled.update { $0 += 1 }
            throw error
        }
        return Image(data: pngTagged(request.url.absoluteString), contentType: "image/png")
    }
}

/// Returns once `value` reaches at least `target`: the stream delivers every newest value, so
/// nothing is polled.
func reach(_ value: LiveValue<Int>, _ target: Int) async {
    for await current in value.stream() where current >= target { return }
}

/// Waits until `counter` reaches `target`.
func reach(_ counter: LiveCounter, _ target: Int) async {
    for await current in counter.stream() where current >= target { return }
}

/// Deterministic image-like payloads of a given size: a PNG's signature (the pipeline answers
/// only bytes that begin as an image), then bytes that differ by seed.
func payload(_ seed: Int, size: Int = 30_000) -> [UInt8] {
    let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    return Array(signature.prefix(size)) + (signature.count..<max(size, signature.count)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7) }
}

/// `text`'s bytes after a PNG's signature: a payload a test can read back.
func pngTagged(_ text: String) -> [UInt8] {
    [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(text.utf8)
}

extension ImagePipeline {
    /// Returns once no answered image waits for its disk write: every write begun so far (and
    /// its rename) is done. An answer no longer waits for the disk; a test that reads the disk
    /// after it (a restart, a file count) waits here. Follows the stages' changes (a write's slot
    /// taken, queued, given back), so nothing is polled: memory holds an image for its write
    /// only while that write runs or queues.
    func writesSettled() async {
        for await stats in onSchedulingChange
        where stats.diskWrites.running == 0 && stats.diskWrites.queued == 0 && memory.heldForWrites.count == 0 {
            return
        }
    }

    /// ``image(for:)``, returning once the image (and its original, for a variant) is on disk.
    nonisolated func imageStored(for request: ImageRequest) async throws -> Image {
        let image = try await image(for: request)
        await writesSettled()
        return image
    }
}
