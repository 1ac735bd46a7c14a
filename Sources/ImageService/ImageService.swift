/// The image service's namespace: imgproxy-style request paths decoded, their signature checked,
/// and their processing options turned into one canonical ``ProcessingPlan``.
///
/// Everything here is a value type and `Sendable`; nothing is shared or isolated.
public enum ImageService {}
