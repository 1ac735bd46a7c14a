// A pipeline with memory, a crash-safe disk cache and the network, with a thumbnail processor.
// Needs an image server: the project's gallery (`emojiart gallery --port 8080`, or `make run`),
// or GALLERY=http://host:port naming one with the same /gallery/image?N paths.
import Foundation
import ImageCache
import Imaging

// snippet.show
/// Makes 200 px PNG thumbnails with libvips. Its identifier is part of the cache key.
struct Thumbnail: ImageProcessing {
    let size: Int
    var identifier: String { "thumbnail-\(size)-png" }

    func process(_ image: ImageCache.Image) async throws -> ImageCache.Image {
        let thumbnail = try Imaging().thumbnail(image.data, fitting: size)
        return ImageCache.Image(
            data: thumbnail.data, contentType: thumbnail.mimeType,
            pixelSize: .init(width: thumbnail.width, height: thumbnail.height)
        )
    }
}

try Imaging.start()  // before other threads start: libvips is set up once
let pipeline = ImagePipeline(configuration: .init(
    diskDirectory: URL(fileURLWithPath: ProcessInfo.processInfo.environment["IMAGE_CACHE_DIR"] ?? "/tmp/my-image-cache"),
    diskSizeLimit: 256 * 1024 * 1024
))
await pipeline.setUp()  // once; the first lookup would do it too

let gallery = ProcessInfo.processInfo.environment["GALLERY"] ?? "http://127.0.0.1:8080"
let url = URL(string: "\(gallery)/gallery/image?7")!
// A variant is made from its original, which is fetched (and stored) once for all variants.
let thumbnail = try await pipeline.image(for: ImageRequest(url: url, processor: Thumbnail(size: 200)))
// The original, checked against the SHA-256 a feed lists: a mismatch is an error, never cached
// (a digest that is not 64 hex digits is refused at once with ImagePipeline.Error.invalidDigest).
let checksum = "sha256:" + String(repeating: "0", count: 64)  // the feed's checksum of piece 7
let original = try? await pipeline.image(for: ImageRequest(url: url, expectedSHA256: checksum))
// Offline: only what the cache holds; a miss throws ImagePipeline.Error.notCached.
let cached = try? await pipeline.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad))

let stats = await pipeline.stats()
print(thumbnail.pixelSize as Any, original?.byteCount as Any, cached != nil, stats.memoryHits, stats.diskHits, stats.originFetches)
// Before the program ends: answers do not wait for their disk writes, flush() does.
await pipeline.flush()
