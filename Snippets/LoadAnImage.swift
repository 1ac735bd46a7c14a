// Load images: the book's image(_:) and the article's fetch(_:) entry points on one pipeline.
// Needs an image server: the project's gallery (`emojiart gallery --port 8080`, or `make run`),
// or GALLERY=http://host:port naming one with the same /gallery/image?N paths.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageCache

// snippet.show
// The gallery to load from: `emojiart gallery --port 8080` serves /gallery/image?N.
let gallery = ProcessInfo.processInfo.environment["GALLERY"] ?? "http://127.0.0.1:8080"
let pipeline = ImagePipeline(configuration: .init(baseURL: URL(string: gallery)!))

// The book's image(_:): a server path, resolved against the base URL.
let first = try await pipeline.image("/gallery/image?1")

// The article's fetch(_ url:) and fetch(_ urlRequest:): an absolute URL, or a request with
// headers and a cache policy of its own.
let second = try await pipeline.fetch(URL(string: "\(gallery)/gallery/image?2")!)
var request = URLRequest(url: URL(string: "\(gallery)/gallery/image?3")!)
request.cachePolicy = .returnCacheDataElseLoad
let third = try await pipeline.fetch(request)

// Where an answer came from: the same URL again is a memory hit.
let again = try await pipeline.response(for: ImageRequest(url: URL(string: "\(gallery)/gallery/image?2")!))
print(first.byteCount, second.contentType, third.pixelSize as Any, again.source)  // ... memory
print("memory hits so far: \(await pipeline.stats().memoryHits)")  // 1

// Not a URL the pipeline can load: refused at once, nothing asked, nothing remembered.
do { _ = try await pipeline.image("not a url at all") } catch { print(error) }  // invalidURL
do { _ = try await pipeline.fetch(URL(string: "ftp://example.com/a.png")!) } catch { print(error) }  // invalidURL
