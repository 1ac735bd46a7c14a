// Load images with ImageLoader: the book's actor and the article's fetch(_:) entry points.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageCache

// snippet.show
let loader = ImageLoader(configuration: .init(baseURL: URL(string: "http://127.0.0.1:8080")!))

// The book's image(_:): a server path, resolved against the base URL.
let first = try await loader.image("/gallery/image?1")

// The article's fetch(_ url:) and fetch(_ urlRequest:): an absolute URL, or a request with
// headers and a cache policy of its own.
let second = try await loader.fetch(URL(string: "http://127.0.0.1:8080/gallery/image?2")!)
var request = URLRequest(url: URL(string: "http://127.0.0.1:8080/gallery/image?3")!)
request.cachePolicy = .returnCacheDataElseLoad
let third = try await loader.fetch(request)

// Concurrent calls for one key share one download; the result stays in memory.
print(first.data.count, second.contentType, third.pixelSize as Any)
for await hits in loader.inMemoryAccess.prefix(1) { print("memory hits so far: \(hits)") }
