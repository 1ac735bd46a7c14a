/// The global actor the image pipeline's coordination runs on: the book's `ImageDatabase`,
/// as Nuke's `ImagePipelineActor`. A marker, as a global actor is.
///
/// On it: who waits for which flight, what starts next in each stage (disk reads, downloads,
/// processing, disk writes) and at which priority, and what failed and until when. (The images
/// waiting for their disk write are the memory cache's, read from any thread.) ``ImagePipeline`` and ``ImagePrefetcher`` are isolated to it;
/// every pipeline shares its one serial executor, so the work on it is short bookkeeping, never
/// I/O. Heavy work (reading and writing the disk, fetching, hashing, decoding and processing)
/// runs off it, and a memory hit never touches it.
///
/// ```swift
/// @ImageDatabase func prefetchVisible(_ pipeline: ImagePipeline, _ requests: [ImageRequest]) {
///     ImagePrefetcher(pipeline: pipeline).startPrefetching(with: requests)
/// }
/// ```
@globalActor
public actor ImageDatabase {
    /// The actor's one instance.
    public static let shared = ImageDatabase()

    private init() {}
}
