// The engine without the book's names: one ImagePipeline, shared by faces made over it.
import Foundation
import ImageCache

// snippet.show
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("my-images")
let pipeline = ImagePipeline(
    configuration: .init(limits: .init(downloads: 4, downloadsPerHost: 2)),
    disk: DiskStorage(directory: directory, sizeLimit: 256 * 1024 * 1024)
)
_ = await pipeline.setUp()  // optional: the first lookup that needs the disk does it

let url = URL(string: "http://127.0.0.1:8080/gallery/image?7")!
let image = try await pipeline.image(for: ImageRequest(url: url))
let task = pipeline.imageTask(with: ImageRequest(url: url, priority: .high))

// Code written against the book keeps its shape: its actor as a face over this pipeline.
let loader = ImageLoader(pipeline: pipeline)
let same = try await loader.fetch(url)  // a memory hit
print(image.data.count, try await task.image == same, pipeline.stats().memoryHits)
