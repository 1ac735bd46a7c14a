/// What can go wrong when reading, processing or writing an image.
extension Imaging {
    /// A typed imaging failure; each case carries what a user needs to act on it.
    public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
        /// The input has no bytes.
        case empty
        /// The bytes are not an image format libvips recognises. `looksLikeText` is true when
        /// the input appears to be text, such as an HTML error page served instead of an image.
        case unknownFormat(byteCount: Int, looksLikeText: Bool)
        /// The format is recognised but not accepted (only PNG, JPEG, WebP, GIF and AVIF are).
        case unsupportedFormat(String)
        /// The encoded input is larger than ``Limits/maxBytes``.
        case inputTooLarge(bytes: Int, limit: Int)
        /// The header declares more pixels than ``Limits/maxPixels``.
        case tooManyPixels(width: Int, height: Int, limit: Int)
        /// The header declares a width or a height over ``Limits/maxSide``.
        case sideTooLong(width: Int, height: Int, limit: Int)
        /// An image libvips must decode whole (an AVIF, a GIF, an interlaced PNG, a progressive
        /// JPEG) would take about `bytes` of memory to decode, over ``Limits/maxDecodeMemory``.
        case tooMuchMemoryToDecode(format: ImageFormat, width: Int, height: Int, bytes: Int, limit: Int)
        /// The image is truncated or corrupt: decoding its pixels failed.
        case corrupt(format: ImageFormat, detail: String)
        /// Processing or encoding the output failed.
        case encodeFailed(format: String, detail: String)
        /// A bad argument, such as a zero thumbnail size.
        case invalidArgument(String)
        /// libvips could not start.
        case libraryUnavailable(String)
        /// The header declares more frames (an animation's pages) than ``Limits/maxFrames``.
        case tooManyFrames(frames: Int, limit: Int)
        /// A step of ``Imaging/process(_:operations:encoding:stop:)`` would make an image of more
        /// pixels than ``Limits/maxPixels``, or a side longer than ``Limits/maxSide``: refused
        /// before anything is decoded.
        case resultTooLarge(width: Int, height: Int, limit: Int)
        /// The work took longer than its ``Imaging/Stop``'s limit, and was stopped.
        case timedOut(limit: Duration)
        /// The work was stopped by its ``Imaging/Stop``'s ``Imaging/Stop/cancel()``.
        case cancelled

        public var description: String {
            switch self {
            case .empty:
                return "the image is empty (0 bytes): check that the download completed"
            case let .unknownFormat(count, looksLikeText):
                return looksLikeText
                    ? "the \(count) bytes are text, not an image (an HTML error page?): check the URL"
                    : "the \(count) bytes are not a known image format: expected PNG, JPEG, WebP, GIF or AVIF"
            case let .unsupportedFormat(name):
                return "\(name) images are not accepted: convert to PNG, JPEG, WebP, GIF or AVIF"
            case let .inputTooLarge(bytes, limit):
                return "the image is \(bytes) bytes, over the limit of \(limit): raise the byte limit (emojiart thumbnail --max-bytes) or use a smaller file"
            case let .tooManyPixels(width, height, limit):
                return "the image is \(width)x\(height) = \(width * height) pixels, over the limit of \(limit): raise the pixel limit (emojiart thumbnail --max-pixels) or use a smaller image"
            case let .sideTooLong(width, height, limit):
                return "the image is \(width)x\(height), more than \(limit) pixels a side: raise the side limit (emojiart thumbnail --max-side) or use a smaller image"
            case let .tooMuchMemoryToDecode(format, width, height, bytes, limit):
                let kind = switch format {
                case .avif: "an AVIF"
                case .gif: "a GIF"
                case .png: "an interlaced PNG"
                default: "a progressive JPEG"
                }
                return "the image is \(kind) of \(width)x\(height), which libvips decodes whole before it can shrink it: about "
                    + "\(bytes / 1_048_576) MiB of memory, over the limit of \(limit / 1_048_576) MiB: raise the decode memory limit "
                    + "(emojiart thumbnail --decode-memory) or use a smaller (or non-interlaced) image"
            case let .corrupt(format, detail):
                return "the \(format.rawValue.uppercased()) image is truncated or corrupt (\(detail)): get a whole copy of it"
            case let .encodeFailed(format, detail):
                return "encoding \(format) failed (\(detail))"
            case let .invalidArgument(message):
                return "invalid argument: \(message)"
            case let .libraryUnavailable(message):
                return "libvips could not start (\(message)): is libvips installed? run scripts/bootstrap"
            case let .tooManyFrames(frames, limit):
                return "the image is an animation of \(frames) frames, over the limit of \(limit): raise the frame limit or use an image with fewer frames"
            case let .resultTooLarge(width, height, limit):
                return "the result would be \(width)x\(height), over the limit of \(limit) pixels (or of a side): ask for a smaller size"
            case let .timedOut(limit):
                return "making the image took longer than \(limit) and was stopped: ask for less (a smaller size, less blur), or raise the time limit"
            case .cancelled:
                return "making the image was cancelled"
            }
        }
    }
}
