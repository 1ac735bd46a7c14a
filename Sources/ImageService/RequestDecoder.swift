/// Turns an imgproxy request path into a checked ``ProcessingPlan``:
/// `/<signature>/<options>/plain/<percent-encoded source>[@<extension>]` or
/// `/<signature>/<options>/<base64url source, maybe split by '/'>[.<extension>]`.
///
/// The whole flow, from the path's bytes to the plan, reads top to bottom in ``plan(forPath:)``.
/// A value type, `Sendable`: share one across requests.
public struct RequestDecoder: Sendable {
    /// How a decoder checks signatures, which presets it knows, and its limits.
    public struct Configuration: Sendable {
        /// Whether paths must be signed.
        public enum Signing: Sendable {
            /// Every path must carry this signer's signature.
            case required(Signer)
            /// The signature segment may be anything (imgproxy without a key); only for
            /// development, and only when configured so.
            case unsignedAllowed
        }

        /// Signature checking.
        public var signing: Signing
        /// Presets by name, each a path of options such as `rs:fill:300:300/q:80`; a preset named
        /// `default` applies to every request first, as in imgproxy.
        public var presets: [String: String]
        /// The largest width or height (before `dpr`), and the largest crop size, in pixels.
        public var maxDimension: Int
        /// The longest request path, in bytes.
        public var maxPathLength: Int
        /// The most processing options in one path (presets' options not counted).
        public var maxOptions: Int

        /// A configuration; the limits have defaults that fit thumbnails and web images.
        public init(
            signing: Signing, presets: [String: String] = [:], maxDimension: Int = 8192,
            maxPathLength: Int = 8192, maxOptions: Int = 64
        ) {
            self.signing = signing
            self.presets = presets
            self.maxDimension = maxDimension
            self.maxPathLength = maxPathLength
            self.maxOptions = maxOptions
        }
    }

    /// The configuration this decoder was made with.
    public let configuration: Configuration
    let presets: [String: [Option]]

    /// A decoder; every preset is parsed and checked here, so a bad preset fails at startup.
    /// - Throws: ``ImageService/Error/invalidPreset(name:reason:)`` for a preset whose options
    ///   are invalid or that includes itself.
    public init(configuration: Configuration) throws(ImageService.Error) {
        self.configuration = configuration
        var presets: [String: [Option]] = [:]
        for (name, path) in configuration.presets {
            presets[name] = path.split(separator: "/").map(Option.init(preset:))
        }
        self.presets = presets
        for name in presets.keys.sorted() {
            var plan = ProcessingPlan(source: "preset:")
            var used: [String] = []
            do {
                try apply(preset: name, to: &plan, used: &used)
            } catch {
                throw .invalidPreset(name: name, reason: error.description)
            }
        }
    }

    /// The plan a request path asks for.
    /// - Parameter path: the request's path as sent, starting with `/`, without the query.
    /// - Throws: ``ImageService/Error`` saying what in the path was refused.
    public func plan(forPath path: String) throws(ImageService.Error) -> ProcessingPlan {
        let length = path.utf8.count
        guard length <= configuration.maxPathLength else {
            throw .pathTooLong(length: length, limit: configuration.maxPathLength)
        }
        guard path.hasPrefix("/") else { throw .malformedPath(reason: "it does not start with '/'") }
        let afterSlash = path.dropFirst()
        guard let slash = afterSlash.firstIndex(of: "/") else {
            throw .malformedPath(reason: "there is nothing after the signature")
        }
        let signature = afterSlash[..<slash]
        let signed = afterSlash[slash...]  // the path after the signature, with its leading '/'
        guard !signature.isEmpty else { throw .malformedPath(reason: "the signature is empty") }
        if case .required(let signer) = configuration.signing {
            try signer.check(signature: signature, pathAfterSignature: signed)
        }

        // Options are the segments with a ':'; the first segment without one starts the source.
        let segments = signed.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var options: [Option] = []
        var sourceStart = segments.startIndex
        while sourceStart < segments.endIndex, let option = Option(segments[sourceStart]) {
            options.append(option)
            sourceStart += 1
            guard options.count <= configuration.maxOptions else {
                throw .tooManyOptions(limit: configuration.maxOptions)
            }
        }
        guard sourceStart < segments.endIndex else {
            throw .malformedPath(reason: "there is no source URL after the options")
        }
        let (source, fileExtension) = try Self.source(from: segments[sourceStart...])

        var plan = ProcessingPlan(source: source)
        var used: [String] = []
        if presets["default"] != nil {
            try apply(preset: "default", to: &plan, used: &used)
        }
        for option in options {
            try apply(option, to: &plan, used: &used)
        }
        if let fileExtension {  // the URL's extension wins over `format`, as in imgproxy
            guard let format = ProcessingPlan.Format(extension: fileExtension) else {
                throw .unsupportedFormat(String(fileExtension))
            }
            plan.format = format
        }
        return plan
    }

    /// The source URL and the extension, from the segments after the options.
    static func source(
        from segments: ArraySlice<Substring>
    ) throws(ImageService.Error) -> (String, Substring?) {
        let bytes: [UInt8]
        let fileExtension: Substring?
        switch segments.first {
        case "plain":
            let plain = segments.dropFirst().joined(separator: "/")
            var encoded = Substring(plain)
            if let at = encoded.lastIndex(of: "@") {
                fileExtension = encoded[encoded.index(after: at)...]
                encoded = encoded[..<at]
            } else {
                fileExtension = nil
            }
            guard let decoded = PercentEncoding.decode(encoded) else {
                throw .invalidPercentEncoding(String(encoded))
            }
            bytes = decoded
        case "enc":
            throw .encryptedSourceUnsupported
        default:
            guard !segments.contains(where: \.isEmpty) else {
                throw .malformedPath(reason: "the base64 source has an empty segment")
            }
            var encoded = Substring(segments.joined())
            if let dot = encoded.lastIndex(of: ".") {
                fileExtension = encoded[encoded.index(after: dot)...]
                encoded = encoded[..<dot]
            } else {
                fileExtension = nil
            }
            while encoded.last == "=" { encoded = encoded.dropLast() }  // padding is tolerated
            guard let decoded = Base64URL.decode(encoded) else {
                throw .invalidBase64Source(String(encoded))
            }
            bytes = decoded
        }
        if let fileExtension, fileExtension.isEmpty {
            throw .malformedPath(reason: "the extension after the source is empty")
        }
        guard !bytes.isEmpty else { throw .invalidSourceURL("it is empty") }
        guard let source = String(validating: bytes, as: UTF8.self) else {
            throw .invalidSourceURL("it is not UTF-8")
        }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw .invalidSourceURL("it contains control characters")
        }
        return (source, fileExtension)
    }
}

/// One processing option as written: its name and its colon-separated arguments.
struct Option: Sendable {
    let name: Substring
    let arguments: [Substring]

    /// The option a path segment holds, or nil for a segment without a `:`, which starts the
    /// source. As imgproxy 3 does, the segment is percent-decoded first when it decodes (so `%3A`
    /// separates as `:` does), and read as written when it does not.
    init?(_ segment: Substring) {
        var segment = segment
        if segment.contains("%"), let bytes = PercentEncoding.decode(segment),
            let decoded = String(validating: bytes, as: UTF8.self)
        {
            segment = Substring(decoded)
        }
        let parts = segment.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count > 1 else { return nil }
        name = parts[0]
        arguments = Array(parts.dropFirst())
    }

    /// A preset's segment: one without a `:` is an option without arguments, refused by name.
    init(preset segment: Substring) {
        if let option = Option(segment) {
            self = option
        } else {
            name = segment
            arguments = []
        }
    }
}
