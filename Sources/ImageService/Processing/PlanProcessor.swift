public import ImageCache
public import Imaging
import NIOCore

/// Makes the result of one ``ProcessingPlan`` from an original's bytes with libvips, with
/// imgproxy's semantics: an `ImageCache` processor, so the cache stores each result once under
/// ``identifier``.
///
/// The controller resolves the output format first (the plan's, or from `Accept`), and gives
/// it as an ``Output``. The source's header is checked against ``limits`` before any pixel is
/// decoded. A value type, `Sendable`; ``process(_:)`` is synchronous CPU work, safe to run on
/// many threads at once (the cache runs it on its processing threads).
public struct PlanProcessor: ImageProcessing {
    /// The format the result is written in.
    public enum Output: Sendable, Hashable {
        /// This format.
        case format(ProcessingPlan.Format)
        /// The source's own format when libvips writes it, else JPEG. (The libvips EmojiArt
        /// ships writes every format `Imaging` reads: PNG, JPEG, WebP, GIF and AVIF; a system
        /// libvips may lack an AV1 encoder, and then an AVIF source gives JPEG.)
        case sourceFormat
    }

    /// The plan; its source URL, `cachebuster`, `expires` and `filename` do not change the
    /// result.
    public let plan: ProcessingPlan
    /// The output format.
    public let output: Output
    /// What a source may be: `Imaging/Limits/maxPixels` (imgproxy's 50 megapixels by
    /// default), `Imaging/Limits/maxFrames` and the rest, checked from the header.
    public let limits: Imaging.Limits

    /// The limits of a processor made without any: imgproxy's 50 megapixels, and at most 100
    /// frames (only the first is used, but a source of thousands is refused rather than read).
    public static let defaultLimits = Imaging.Limits(maxPixels: 50_000_000, maxFrames: 100)

    /// The longest the processing of one source may take (decode, steps, encode): past it, it
    /// stops with ``ImageService/Error/processingTimedOut(seconds:)``. Not part of the
    /// ``identifier``: it never changes a result.
    public let timeLimit: Duration

    /// A processor for `plan`, written as `output`, refusing sources past `limits` and giving up
    /// after `timeLimit` (10 s by default, imgproxy's `IMGPROXY_TIMEOUT`).
    public init(plan: ProcessingPlan, output: Output, limits: Imaging.Limits = PlanProcessor.defaultLimits, timeLimit: Duration = .seconds(10)) {
        self.plan = plan
        self.output = output
        self.limits = limits
        self.timeLimit = timeLimit
    }

    /// What changes the result's bytes, defaults resolved, in a fixed order: equal for two
    /// spellings of the same processing (`rs:fill:300:200` and `rt:fill/w:300/h:200`, `q:80`
    /// and a JPEG's default), different for different processing. The source URL, `cachebuster`,
    /// `expires` and `filename` are not part of it: the cache keys the source itself. Limits are
    /// not either: they refuse a source, they never change a result.
    public var identifier: String {
        var parts = [
            "imgproxy1",
            "rt:\(plan.resizingType.rawValue)",
            "w:\(plan.width)",
            "h:\(plan.height)",
            "dpr:\(RequestDecoder.format(plan.dpr))",
            "el:\(plan.enlarge ? 1 : 0)",
            "ex:" + (plan.extend.enabled ? "1:" + plan.extend.gravity.canonical : "0"),
            "g:\(plan.gravity.canonical)",
        ]
        if let crop = plan.crop {
            parts.append("c:\(RequestDecoder.format(crop.width)):\(RequestDecoder.format(crop.height)):" + (crop.gravity ?? plan.gravity).canonical)
        }
        if let background = plan.background { parts.append("bg:\(background.red),\(background.green),\(background.blue)") }
        if let blur = plan.blur, blur > 0 { parts.append("bl:\(RequestDecoder.format(blur))") }
        if let sharpen = plan.sharpen, sharpen > 0 { parts.append("sh:\(RequestDecoder.format(sharpen))") }
        parts.append("rot:\(plan.rotate)")
        parts.append("ar:\(autoRotate ? 1 : 0)")
        parts.append("sm:\(stripsMetadata ? 1 : 0)")
        // The quality only where an encoder takes one: `q:50` changes no PNG.
        let formats = switch output {
        case let .format(format): [Self.encodingFormat(format)]
        case .sourceFormat: Imaging.Encoding.Format.allCases
        }
        let qualities = formats.filter(\.takesQuality).map { "\($0.rawValue)\(quality(of: $0))" }
        parts.append("f:" + (output == .sourceFormat ? "source" : formats[0].rawValue) + (qualities.isEmpty ? "" : ":" + qualities.joined(separator: ",")))
        return parts.joined(separator: "/")
    }

    /// Whether the source is turned upright by its EXIF orientation: the plan's, on by default
    /// (imgproxy's `IMGPROXY_AUTO_ROTATE`).
    public var autoRotate: Bool { plan.autoRotate ?? true }
    /// Whether metadata is stripped: the plan's, on by default (imgproxy's `IMGPROXY_STRIP_METADATA`).
    public var stripsMetadata: Bool { plan.stripMetadata ?? true }

    /// The quality `format` is written at: the plan's, or imgproxy's defaults: 80 for JPEG
    /// (`IMGPROXY_QUALITY`), 79 for WebP and 63 for AVIF (`IMGPROXY_FORMAT_QUALITY`: the
    /// qualities at which each looks as good as JPEG at 80, in smaller files). PNG and GIF take
    /// no quality; they carry 80, unused.
    public func quality(of format: Imaging.Encoding.Format) -> Int {
        if let quality = plan.quality { return quality }
        return switch format {
        case .webp: 79
        case .avif: 63
        case .jpeg, .png, .gif: 80
        }
    }

    /// Makes the result from `image`'s bytes, read in place; the output is copied once, from
    /// libvips' buffer into the result's.
    /// - Throws: ``ImageService/Error/sourceResolutionTooLarge(width:height:limit:)``,
    ///   ``ImageService/Error/sourceFileTooLarge(bytes:limit:)``,
    ///   ``ImageService/Error/tooManyFrames(frames:limit:)``,
    ///   ``ImageService/Error/sourceUndecodable(reason:)`` or
    ///   ``ImageService/Error/processingFailed(reason:)``.
    public func process(_ image: ImageCache.Image) async throws -> ImageCache.Image {
        // Given up at the time limit, or as soon as the one who waits for it is gone (every
        // request that asked for it cancelled): libvips checks the stop as it computes.
        let stop = Imaging.Stop(after: timeLimit)
        do {
            return try await withTaskCancellationHandler {
                try image.withUnsafeBytes { bytes throws(ImageService.Error) in try process(bytes, stop: stop) }
            } onCancel: {
                stop.cancel()
            }
        } catch ImageService.Error.processingCancelled {
            throw CancellationError()  // the cache remembers no failure for work nobody waits for
        }
    }

    /// ``process(_:)`` of encoded bytes read in place, the output handed back as an
    /// `ImageCache.Image`: the one flow, from the header to the encoded result.
    func process(_ bytes: UnsafeRawBufferPointer, stop: Imaging.Stop? = nil) throws(ImageService.Error) -> ImageCache.Image {
        let imaging = Imaging(limits: limits)
        do {
            let source = try imaging.probe(bytes: bytes)
            let format = switch output {
            case let .format(format): Self.encodingFormat(format)
            case .sourceFormat: Self.encodingFormat(source: source.format)
            }
            let encoding = Imaging.Encoding(format, quality: quality(of: format), keepsMetadata: !stripsMetadata)
            let steps = Self.operations(for: plan, source: source, autoRotate: autoRotate, flattensAlpha: format == .jpeg)
            return try imaging.process(bytes, operations: steps, encoding: encoding, stop: stop) { encoded in
                var buffer = ByteBufferAllocator().buffer(capacity: encoded.bytes.count)
                buffer.writeBytes(encoded.bytes)
                return ImageCache.Image(
                    buffer: buffer, contentType: encoded.mimeType,
                    pixelSize: .init(width: encoded.width, height: encoded.height))
            }
        } catch {
            throw ImageService.Error(error)
        }
    }

    /// The encoder for a plan's format.
    static func encodingFormat(_ format: ProcessingPlan.Format) -> Imaging.Encoding.Format {
        switch format {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .avif: .avif
        case .gif: .gif
        }
    }

    /// The encoder for a source's own format: each format `Imaging` reads, it also writes,
    /// AVIF when this libvips has an AV1 encoder; JPEG otherwise.
    static func encodingFormat(source: ImageFormat) -> Imaging.Encoding.Format {
        switch source {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .avif: writesAVIF ? .avif : .jpeg
        case .gif: .gif
        }
    }

    /// Whether this process's libvips writes AVIF, asked once (a 2 x 2 image encoded and read back).
    static let writesAVIF = Imaging().canEncode(.avif(quality: 50, effort: 0))
}

extension Imaging.Encoding.Format {
    /// Whether the encoder takes a quality: the lossy ones.
    var takesQuality: Bool { self == .jpeg || self == .webp || self == .avif }
}

extension ImageService.Error {
    /// The service's error for an imaging failure: a source too large (resolution, bytes,
    /// frames), a source that is no image libvips decodes, or processing that failed.
    init(_ error: Imaging.Error) {
        switch error {
        case let .tooManyPixels(width, height, limit):
            self = .sourceResolutionTooLarge(width: width, height: height, limit: "\(limit) pixels")
        case let .sideTooLong(width, height, limit):
            self = .sourceResolutionTooLarge(width: width, height: height, limit: "\(limit) pixels a side")
        case let .tooMuchMemoryToDecode(_, width, height, bytes, limit):
            self = .sourceResolutionTooLarge(width: width, height: height, limit: "\(limit >> 20) MiB to decode, it takes \(bytes >> 20) MiB")
        case let .inputTooLarge(bytes, limit):
            self = .sourceFileTooLarge(bytes: bytes, limit: limit)
        case let .tooManyFrames(frames, limit):
            self = .tooManyFrames(frames: frames, limit: limit)
        case let .resultTooLarge(width, height, limit):
            self = .resultTooLarge(width: width, height: height, limit: limit)
        case let .timedOut(limit):
            self = .processingTimedOut(seconds: Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18)
        case .cancelled:
            self = .processingCancelled
        case .empty, .unknownFormat, .unsupportedFormat, .corrupt:
            self = .sourceUndecodable(reason: error.description)
        case .encodeFailed, .invalidArgument, .libraryUnavailable:
            self = .processingFailed(reason: error.description)
        }
    }
}
