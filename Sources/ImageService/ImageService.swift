/// The image service's namespace: imgproxy-style request paths decoded, their signature checked,
/// and their processing options turned into one canonical ``ProcessingPlan``; its sources fetched
/// as a ``SourcePolicy`` allows, by ``SourceFetcher``.
///
/// Everything here is a value type and `Sendable`; nothing is shared or isolated (the fetcher's
/// connections run on AsyncHTTPClient's shared event loops).
public enum ImageService {}
