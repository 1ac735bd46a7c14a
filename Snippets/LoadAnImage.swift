// Load images: the book's image(_:) and the article's fetch(_:) entry points on one pipeline.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageCache

// snippet.show
let pipeline = ImagePipeline(configuration: .init(baseURL: URL(string: "http://127.0.0.1:8080")!))

// The book's image(_:): a server path, resolved against the base URL.
let first = try await pipeline.image("/gallery/image?1")

// The article's fetch(_ url:) and fetch(_ urlRequest:): an absolute URL, or a request with
// headers and a cache policy of its own.
let second = try await pipeline.fetch(URL(string: "http://127.0.0.1:8080/gallery/image?2")!)
var request = URLRequest(url: URL(string: "http://127.0.0.1:8080/gallery/image?3")!)
request.cachePolicy = .returnCacheDataElseLoad
let third = try await pipeline.fetch(request)

// Where an answer came from: the same URL again is a memory hit.
let again = try await pipeline.response(for: ImageRequest(url: URL(string: "http://127.0.0.1:8080/gallery/image?2")!))
print(first.byteCount, second.contentType, third.pixelSize as Any, again.source)  // ... memory
print("memory hits so far: \(await pipeline.stats().memoryHits)")  // 1

// Not a path: refused at once, nothing is asked.
do { _ = try await pipeline.image("not a url at all") } catch { print(error) }  // invalidURL
