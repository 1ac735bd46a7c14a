import EmojiArtApp
import Foundation
import GalleryServer
import ImageCache
import Testing
import TestSupport

/// A burst of cold work against a large gallery: everything completes, each original is fetched
/// once, and no stage ever runs more than its limit, read from the pipeline's own high-water
/// marks.
@Suite(.timeLimit(.minutes(3))) struct BurstTests {
    @Test func fiveHundredColdThumbnailsAtOnceStayWithinEveryLimit() async throws {
        let catalog = try ArtCatalog(pieces: 500)
        let limits = ImagePipeline.Limits(downloads: 8, downloadsPerHost: 6, processing: 2, diskWrites: 2)
        try await withGallery(catalog: catalog, loader: .init(limits: limits)) { galleryURL, pipeline in
            let thumbnail = ThumbnailProcessor.catalogThumbnail(size: 200)
            let results = await withTaskGroup(of: (Int, Result<Image, any Error>).self) { group in
                for piece in 0..<500 {
                    let url = URL(string: "gallery/image?\(piece)", relativeTo: galleryURL)!.absoluteURL
                    group.addTask {
                        do {
                            return (piece, .success(try await pipeline.image(for: ImageRequest(url: url, processor: thumbnail, priority: .high))))
                        } catch {
                            return (piece, .failure(error))
                        }
                    }
                }
                return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            #expect(results.count == 500, "every request completes")
            for (piece, result) in results {
                switch result {
                case let .success(image):
                    #expect(!catalog.missing.contains(piece))
                    #expect(image.contentType == "image/png" && (image.pixelSize?.width ?? 0) <= 200)
                case let .failure(error):
                    #expect(catalog.missing.contains(piece), "piece \(piece): \(error)")
                }
            }
            let requests = try await galleryImageRequests(galleryURL)
            #expect(requests.count == 500)
            #expect(requests.values.allSatisfy { $0 == 1 }, "each original fetched once")

            let stats = await pipeline.stats().scheduling
            #expect(stats.downloads.maxRunning <= 8 && stats.downloads.maxRunning >= 1)
            #expect(stats.maxDownloadsOnOneHost <= 6)
            #expect(stats.processing.maxRunning <= 2 && stats.processing.maxRunning >= 1)
            #expect(stats.diskWrites.maxRunning <= 2)
            #expect(stats.processing.started == 450)
            #expect(stats.downloads.started == 500)
            #expect(stats.downloads.queued == 0 && stats.processing.queued == 0 && stats.waitingOriginalBytes == 0)
        }
    }
}
