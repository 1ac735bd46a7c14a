// A program that loads images into a disk cache and ends: the next run answers from the disk.
// Needs an image server: the project's gallery (`emojiart gallery --port 8080`, or `make run`),
// or GALLERY=http://host:port; IMAGE_CACHE_DIR moves the cache (default ~/.cache/ImageCache).
import Foundation
import ImageCache

// snippet.show
let environment = ProcessInfo.processInfo.environment
let gallery = environment["GALLERY"] ?? "http://127.0.0.1:8080"
let directory = environment["IMAGE_CACHE_DIR"].map { URL(fileURLWithPath: $0) } ?? ImagePipeline.Configuration.defaultDirectory
let pipeline = ImagePipeline(configuration: .init(diskDirectory: directory))

for piece in [1, 2, 3] {
    let response = try await pipeline.response(for: ImageRequest(url: URL(string: "\(gallery)/gallery/image?\(piece)")!))
    print("piece \(piece): \(response.image.byteCount) bytes from \(response.source)")  // network, then disk
}

// An answer does not wait for its disk write. Before the program ends, wait for the writes:
// without this, what was still being written is lost and fetched again next time.
await pipeline.flush()

let stats = await pipeline.stats()
print("disk hits: \(stats.diskHits), downloads: \(stats.downloads)")
