/// What to do with one source image: imgproxy's processing options, checked and in one canonical
/// form, so that two spellings of the same processing are equal plans with the same
/// ``canonicalPath``.
///
/// Defaults are imgproxy's. An option the request did not set and whose default is the server's
/// (quality, format, auto-rotation, metadata) is `nil`.
public struct ProcessingPlan: Sendable, Hashable {
    /// How the image is fitted to ``width`` by ``height``: imgproxy's `resizing_type`.
    public enum ResizingType: String, Sendable, Hashable, CaseIterable {
        /// Keeps the aspect ratio and fits inside the size.
        case fit
        /// Keeps the aspect ratio, fills the size and crops what projects.
        case fill
        /// As `fill`, but crops a result smaller than the size to the size's aspect ratio.
        case fillDown = "fill-down"
        /// Ignores the aspect ratio.
        case force
        /// `fill` when source and result have the same orientation, `fit` otherwise.
        case auto
    }

    /// The format of the result: the `format` option, or the URL's extension.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// JPEG, spelled `jpg` or `jpeg`.
        case jpeg = "jpg"
        /// PNG.
        case png
        /// WebP.
        case webp
        /// AVIF.
        case avif
        /// GIF.
        case gif

        /// The format an imgproxy extension names (`jpg`, `jpeg`, `png`, `webp`, `avif`, `gif`),
        /// or nil for another.
        public init?(extension name: some StringProtocol) {
            switch name {
            case "jpg", "jpeg": self = .jpeg
            case "png": self = .png
            case "webp": self = .webp
            case "avif": self = .avif
            case "gif": self = .gif
            default: return nil
            }
        }
    }

    /// An sRGB color without alpha: the `background` option.
    public struct Color: Sendable, Hashable {
        /// Red, 0...255.
        public var red: UInt8
        /// Green, 0...255.
        public var green: UInt8
        /// Blue, 0...255.
        public var blue: UInt8

        /// A color of three channels.
        public init(red: UInt8, green: UInt8, blue: UInt8) {
            self.red = red
            self.green = green
            self.blue = blue
        }
    }

    /// The `extend` option: whether an image smaller than the size is extended to it, and where.
    public struct Extend: Sendable, Hashable {
        /// Whether to extend.
        public var enabled: Bool
        /// Where the image sits in the extended area; never ``Gravity/Kind/smart``.
        public var gravity: Gravity

        /// An extend setting.
        public init(enabled: Bool = false, gravity: Gravity = .center) {
            self.enabled = enabled
            self.gravity = gravity
        }
    }

    /// The `crop` option: an area cut before resizing.
    public struct Crop: Sendable, Hashable {
        /// Width: pixels when at least 1, a fraction of the source below 1, the whole width at 0.
        public var width: Double
        /// Height: pixels when at least 1, a fraction of the source below 1, the whole height at 0.
        public var height: Double
        /// Where to cut; nil means the plan's ``ProcessingPlan/gravity``.
        public var gravity: Gravity?

        /// A crop area.
        public init(width: Double, height: Double, gravity: Gravity? = nil) {
            self.width = width
            self.height = height
            self.gravity = gravity
        }
    }

    /// The source image's URL, decoded.
    public var source: String
    /// The resizing type; `fit` by default.
    public var resizingType: ResizingType = .fit
    /// The width in pixels before ``dpr``; 0 means from the height and the aspect ratio.
    public var width: Int = 0
    /// The height in pixels before ``dpr``; 0 means from the width and the aspect ratio.
    public var height: Int = 0
    /// The device pixel ratio the size is multiplied by, in (0, 8]; 1 by default.
    public var dpr: Double = 1
    /// Whether an image smaller than the size is enlarged.
    public var enlarge = false
    /// Whether and where an image smaller than the size is extended.
    public var extend = Extend()
    /// Where to cut when cutting is needed; center by default.
    public var gravity = Gravity.center
    /// An area cut before resizing, if any.
    public var crop: Crop?
    /// The encoder's quality, 1...100, or nil for the server's default.
    public var quality: Int?
    /// The result's format, or nil for the source's.
    public var format: Format?
    /// The color behind transparent parts, or nil to leave them.
    public var background: Color?
    /// The Gaussian blur's sigma, or nil for none.
    public var blur: Double?
    /// The sharpen filter's sigma, or nil for none.
    public var sharpen: Double?
    /// Clockwise rotation in degrees: 0, 90, 180 or 270.
    public var rotate = 0
    /// Whether to rotate by the EXIF orientation, or nil for the server's default.
    public var autoRotate: Bool?
    /// Whether to strip metadata, or nil for the server's default.
    public var stripMetadata: Bool?
    /// A string that changes the URL and nothing else (imgproxy's `cachebuster`).
    public var cacheBuster: String?
    /// The Unix time after which the URL is refused, if any.
    public var expires: Int64?
    /// The file name for `Content-Disposition`, if any.
    public var filename: String?

    /// A plan with imgproxy's defaults for a source URL.
    public init(source: String) {
        self.source = source
    }

    /// Whether the URL has expired at a Unix time (seconds); a plan without `expires` never does.
    public func isExpired(atUnixTime now: Int64) -> Bool {
        guard let expires else { return false }
        return now > expires
    }
}
