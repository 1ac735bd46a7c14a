// A pipeline with memory, a crash-safe disk cache and the network, with a thumbnail processor.
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
let database = ImagePipeline(configuration: .init(
    diskDirectory: URL(fileURLWithPath: "/tmp/my-image-cache"),
    diskSizeLimit: 256 * 1024 * 1024
))
await database.setUp()  // once; the first lookup would do it too

let url = URL(string: "http://127.0.0.1:8080/gallery/image?7")!
// A variant is made from its original, which is fetched (and stored) once for all variants.
let thumbnail = try await database.image(for: ImageRequest(url: url, processor: Thumbnail(size: 200)))
// The original, checked against the SHA-256 a feed lists: a mismatch is an error, never cached
// (a digest that is not 64 hex digits is refused at once with ImagePipeline.Error.invalidDigest).
let checksum = "sha256:" + String(repeating: "0", count: 64)  // the feed's checksum of piece 7
let original = try? await database.image(for: ImageRequest(url: url, expectedSHA256: checksum))
// Offline: only what the cache holds; a miss throws ImagePipeline.Error.notCached.
let cached = try? await database.image(for: ImageRequest(url: url, cachePolicy: .returnCacheDataDontLoad))

let stats = await database.stats()
print(thumbnail.pixelSize as Any, original?.byteCount as Any, cached != nil, stats.memoryHits, stats.diskHits, stats.originFetches)
