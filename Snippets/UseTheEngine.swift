// One pipeline with one configuration: memory, a crash-safe disk, limits and a custom processor.
// Needs an image server: the project's gallery (`emojiart gallery --port 8080`, or `make run`),
// or GALLERY=http://host:port naming one with the same /gallery/image?N paths.
import Foundation
import ImageCache

// snippet.show
/// A processor without libvips: keeps the bytes and tags them. Its identifier is part of the
/// cache key, so each processor's variants are cached apart from the originals.
struct Tagged: ImageProcessing {
    var identifier: String { "tagged" }

    func process(_ image: Image) async throws -> Image {
        guard image.byteCount > 8 else { throw TooSmall(bytes: image.byteCount) }
        return Image(data: image.data, contentType: image.contentType)
    }

    struct TooSmall: Error { let bytes: Int }
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("my-images")
let pipeline = ImagePipeline(configuration: .init(
    diskDirectory: directory, diskSizeLimit: 256 * 1024 * 1024,
    limits: .init(downloads: 4, downloadsPerHost: 2)
))
await pipeline.setUp()  // optional: the first lookup that needs the disk does it

let gallery = ProcessInfo.processInfo.environment["GALLERY"] ?? "http://127.0.0.1:8080"
let url = URL(string: "\(gallery)/gallery/image?7")!
let image = try await pipeline.image(for: ImageRequest(url: url))
do {
    let tagged = try await pipeline.response(for: ImageRequest(url: url, processor: Tagged()))
    print(tagged.source)  // processed: made now, from the original in memory
} catch let ImagePipeline.Error.processingFailed(processor, underlying) {
    print(processor, underlying)  // the processor's own error, kept: Tagged.TooSmall
}
print(image.byteCount, await pipeline.stats().memoryHits)

// clearMemory() empties memory; clear() empties memory and the disk.
await pipeline.clearMemory()
// Before the program ends: answers do not wait for their disk writes, flush() does.
await pipeline.flush()
