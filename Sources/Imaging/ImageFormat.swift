/// The encoded formats `Imaging` reads.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// PNG, with or without alpha.
    case png
    /// JPEG (baseline or progressive).
    case jpeg
    /// WebP, lossy or lossless.
    case webp
    /// GIF; the first frame is used.
    case gif
    /// AVIF (AV1 in HEIF), read by libvips' HEIF loader; a HEIF of another codec than AV1 is
    /// reported as corrupt when the libvips in use cannot decode it.
    case avif

    /// The MIME type, e.g. `image/png`.
    public var mimeType: String { "image/\(rawValue)" }

    /// Maps a libvips loader name such as `VipsForeignLoadPngBuffer` to a format.
    init?(loader: String) {
        let name = loader.lowercased()
        if name.contains("png") { self = .png }
        else if name.contains("jpeg") { self = .jpeg }
        else if name.contains("webp") { self = .webp }
        else if name.contains("gif") { self = .gif }
        else if name.contains("heif") { self = .avif }
        else { return nil }
    }
}

/// The encoded formats `Imaging` writes.
public enum OutputFormat: Sendable, Hashable, CustomStringConvertible {
    /// Lossless PNG.
    case png
    /// Lossy WebP at a quality from 1 to 100. With `sharpYUV` (the default), libwebp's sharp
    /// RGB to YUV conversion keeps coloured edges crisp at the cost of about half the encode
    /// time; without it the encode is twice as fast, and the file a little smaller.
    case webp(quality: Int, sharpYUV: Bool = true)
    /// JPEG at a quality from 1 to 100.
    case jpeg(quality: Int)
    /// AVIF (AV1) at a quality from 1 to 100, made with an encoder effort from 0 (fastest) to 9
    /// (smallest).
    case avif(quality: Int, effort: Int)

    /// The MIME type of the encoded output.
    public var mimeType: String {
        switch self {
        case .png: "image/png"
        case .webp: "image/webp"
        case .jpeg: "image/jpeg"
        case .avif: "image/avif"
        }
    }

    /// A short stable name, usable in cache keys: `png`, `webp80` (`webp80-plainyuv` without
    /// sharp YUV), `jpeg85`, `avif50e2`.
    public var description: String {
        switch self {
        case .png: "png"
        case let .webp(quality, sharpYUV): "webp\(quality)" + (sharpYUV ? "" : "-plainyuv")
        case let .jpeg(quality): "jpeg\(quality)"
        case let .avif(quality, effort): "avif\(quality)e\(effort)"
        }
    }
}
