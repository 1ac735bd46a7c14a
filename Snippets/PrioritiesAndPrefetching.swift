// Priorities, a task handle whose priority changes while it waits, and prefetching.
// Needs an image server: the project's gallery (`emojiart gallery --port 8080`, or `make run`),
// or GALLERY=http://host:port naming one with the same /gallery/image?N paths.
import Foundation
import ImageCache

// snippet.show
let gallery = ProcessInfo.processInfo.environment["GALLERY"] ?? "http://127.0.0.1:8080"
let pipeline = ImagePipeline.shared  // the book's shared pipeline: memory and a disk
let pieces = (1...28).map { URL(string: "\(gallery)/gallery/image?\($0)")! }

// What a person looks at goes first; background work waits, and is refused first when full.
let shown = pipeline.imageTask(with: ImageRequest(url: pieces[0], priority: .high))

// Load what they will probably open next, at low priority, into the disk cache.
let prefetcher = ImagePrefetcher(pipeline: pipeline)
await prefetcher.startPrefetching(with: pieces.dropFirst().map { ImageRequest(url: $0) })

// They opened piece 5: a request for a key being prefetched joins that work, at its priority.
let opened = pipeline.imageTask(with: ImageRequest(url: pieces[4], priority: .normal))
opened.priority = .veryHigh

print(try await shown.image.byteCount, try await opened.image.byteCount)
await prefetcher.stopPrefetching()  // what has not started leaves its queue

// A prefetch can be awaited: it returns once each image is loaded (or failed).
let loaded = await prefetcher.prefetch(pieces.prefix(3).map { ImageRequest(url: $0) })
print("\(loaded) of 3 held")
// Before the program ends: answers do not wait for their disk writes, flush() does.
await pipeline.flush()
