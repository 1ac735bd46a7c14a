import HTTPCaching
/// Each imgproxy option applied to a plan, in the order the path gives them; a later option
/// overrides an earlier one, as in imgproxy. Arguments are colon-separated; an omitted or empty
/// argument keeps the current value.
extension RequestDecoder {
    /// imgproxy's options this service does not implement: named in the error, not "unknown".
    static let unsupported: Set<Substring> = [
        "resizing_algorithm", "ra", "min-width", "mw", "min-height", "mh", "zoom", "z", "trim", "t",
        "padding", "pd", "pixelate", "pix", "unsharpening", "ush", "watermark", "wm",
        "watermark_url", "wmu", "watermark_text", "wmt", "watermark_size", "wms", "style", "st",
        "background_alpha", "bga", "adjust", "a", "brightness", "br", "contrast", "co",
        "saturation", "sa", "strip_color_profile", "scp", "keep_copyright", "kcr", "max_bytes",
        "mb", "jpeg_options", "jpgo", "png_options", "pngo", "gif_options", "gifo", "page", "pg",
        "pages", "pgs", "video_thumbnail_second", "vts", "fallback_image_url", "fiu",
        "skip_processing", "skp", "raw", "return_attachment", "att", "format_quality", "fq",
        "autoquality", "aq", "enforce_thumbnail", "eth", "extend_aspect_ratio", "extend_ar", "exar",
        "gradient", "gr", "crop_aspect_ratio", "crop_ar", "car", "dpi", "max_src_resolution", "msr",
        "max_src_file_size", "msfs", "max_animation_frames", "maf", "max_animation_frame_resolution",
        "mafr", "max_result_dimension", "mrd", "hashsum", "hs", "objects_position", "obj_pos", "op",
        "colorize", "col", "duotone", "dt", "monochrome", "mc",
    ]

    /// The largest blur sigma accepted: past it the result is one color anyway.
    static let maxSigma = 100.0
    /// The largest sharpen sigma accepted: libvips' sharpen takes 0.000001 to 10 (past it,
    /// libvips ignored the value and logged a GLib warning, each value a cache entry of the same bytes).
    static let maxSharpenSigma = 10.0

    func apply(_ option: Option, to plan: inout ProcessingPlan, used: inout [String]) throws(ImageService.Error) {
        let name = option.name
        let arguments = option.arguments
        switch name {
        case "resize", "rs":
            // resize:%type:%width:%height:%enlarge:%extend:%gravity...
            try Self.limit(option, to: 8)
            if let type = arguments.first, !type.isEmpty { plan.resizingType = try Self.resizingType(type, option) }
            try applySize(Array(arguments.dropFirst()), option, to: &plan)
        case "size", "s":
            try Self.limit(option, to: 7)
            try applySize(arguments, option, to: &plan)
        case "resizing_type", "rt":
            try Self.limit(option, to: 1)
            plan.resizingType = try Self.resizingType(Self.first(option), option)
        case "width", "w":
            try Self.limit(option, to: 1)
            plan.width = try dimension(Self.first(option), option)
        case "height", "h":
            try Self.limit(option, to: 1)
            plan.height = try dimension(Self.first(option), option)
        case "dpr":
            try Self.limit(option, to: 1)
            let dpr = try Self.number(Self.first(option), option)
            guard dpr > 0, dpr <= 8 else { throw .outOfRange(option: String(name), argument: String(arguments[0]), range: "(0, 8]") }
            plan.dpr = dpr
        case "enlarge", "el":
            try Self.limit(option, to: 1)
            plan.enlarge = try Self.boolean(Self.first(option), option)
        case "extend", "ex":
            try Self.limit(option, to: 4)
            plan.extend = try extend(arguments, option, current: plan.extend)
        case "gravity", "g":
            try Self.limit(option, to: 3)
            plan.gravity = try gravity(arguments, option, allowSmart: true)
        case "crop", "c":
            try Self.limit(option, to: 5)
            guard arguments.count >= 2 else {
                throw .invalidArgument(option: String(name), argument: arguments.joined(separator: ":"), expected: "a width and a height")
            }
            let width = try Self.number(arguments[0], option)
            let height = try Self.number(arguments[1], option)
            for size in [width, height] where size < 0 || size > Double(configuration.maxDimension) {
                throw .outOfRange(option: String(name), argument: Self.format(size), range: "0...\(configuration.maxDimension)")
            }
            let cropGravity = arguments.count > 2 ? try gravity(Array(arguments[2...]), option, allowSmart: true) : nil
            plan.crop = width == 0 && height == 0 && cropGravity == nil ? nil : .init(width: width, height: height, gravity: cropGravity)
        case "quality", "q":
            try Self.limit(option, to: 1)
            let argument = try Self.first(option)
            guard let quality = Int(argument) else {
                throw .invalidArgument(option: String(name), argument: String(argument), expected: "an integer")
            }
            guard (1...100).contains(quality) else { throw .outOfRange(option: String(name), argument: String(argument), range: "1...100") }
            plan.quality = quality
        case "format", "f", "ext":
            try Self.limit(option, to: 1)
            let argument = try Self.first(option)
            guard let format = ProcessingPlan.Format(extension: argument) else { throw .unsupportedFormat(String(argument)) }
            plan.format = format
        case "background", "bg":
            try Self.limit(option, to: 3)
            plan.background = try Self.color(arguments, option)
        case "blur", "bl":
            try Self.limit(option, to: 1)
            plan.blur = try Self.sigma(Self.first(option), option)
        case "sharpen", "sh":
            try Self.limit(option, to: 1)
            plan.sharpen = try Self.sigma(Self.first(option), option, limit: Self.maxSharpenSigma)
        case "rotate", "rot":
            try Self.limit(option, to: 1)
            let argument = try Self.first(option)
            guard let angle = Int(argument) else {
                throw .invalidArgument(option: String(name), argument: String(argument), expected: "an integer")
            }
            guard angle % 90 == 0 else { throw .outOfRange(option: String(name), argument: String(argument), range: "multiples of 90") }
            plan.rotate = (angle % 360 + 360) % 360
        case "auto_rotate", "ar":
            try Self.limit(option, to: 1)
            plan.autoRotate = try Self.boolean(Self.first(option), option)
        case "strip_metadata", "sm":
            try Self.limit(option, to: 1)
            plan.stripMetadata = try Self.boolean(Self.first(option), option)
        case "cachebuster", "cb":
            try Self.limit(option, to: 1)
            let argument = try Self.first(option)
            plan.cacheBuster = argument.isEmpty ? nil : String(argument)
        case "expires", "exp":
            try Self.limit(option, to: 1)
            let argument = try Self.first(option)
            guard let timestamp = Int64(argument) else {
                throw .invalidArgument(option: String(name), argument: String(argument), expected: "a Unix time in seconds")
            }
            plan.expires = timestamp
        case "filename", "fn":
            // filename:%name:%encoded; encoded means URL-safe base64.
            try Self.limit(option, to: 2)
            let argument = try Self.first(option)
            var filename = String(argument)
            if arguments.count > 1, try Self.boolean(arguments[1], option) {
                var encoded = argument
                while encoded.last == "=" { encoded = encoded.dropLast() }
                guard let bytes = Base64URL.decode(encoded), let decoded = String(validating: bytes, as: UTF8.self) else {
                    throw .invalidArgument(option: String(name), argument: String(argument), expected: "URL-safe base64 of UTF-8")
                }
                filename = decoded
            }
            guard !filename.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\"") }) else {
                throw .invalidArgument(option: String(name), argument: String(argument), expected: "a file name without control characters or quotes")
            }
            plan.filename = filename.isEmpty ? nil : filename
        case "preset", "pr":
            guard !arguments.isEmpty else {
                throw .invalidArgument(option: String(name), argument: "", expected: "one or more preset names")
            }
            for preset in arguments {
                try apply(preset: String(preset), to: &plan, used: &used)
            }
        default:
            throw Self.unsupported.contains(name) ? .unsupportedOption(String(name)) : .unknownOption(String(name))
        }
    }

    func apply(preset name: String, to plan: inout ProcessingPlan, used: inout [String]) throws(ImageService.Error) {
        guard let options = presets[name] else { throw .unknownPreset(name) }
        guard !used.contains(name) else { throw .recursivePreset(name) }
        used.append(name)
        defer { used.removeLast() }
        for option in options {
            try apply(option, to: &plan, used: &used)
        }
    }

    /// size's arguments, also resize's after the type: %width:%height:%enlarge:%extend:%gravity...
    private func applySize(_ arguments: [Substring], _ option: Option, to plan: inout ProcessingPlan) throws(ImageService.Error) {
        if arguments.count > 0, !arguments[0].isEmpty { plan.width = try dimension(arguments[0], option) }
        if arguments.count > 1, !arguments[1].isEmpty { plan.height = try dimension(arguments[1], option) }
        if arguments.count > 2, !arguments[2].isEmpty { plan.enlarge = try Self.boolean(arguments[2], option) }
        if arguments.count > 3, !arguments[3].isEmpty {
            plan.extend = try extend(Array(arguments[3...]), option, current: plan.extend)
        }
    }

    private func dimension(_ argument: Substring, _ option: Option) throws(ImageService.Error) -> Int {
        guard let value = Int(argument) else {
            throw .invalidArgument(option: String(option.name), argument: String(argument), expected: "an integer number of pixels")
        }
        guard value >= 0, value <= configuration.maxDimension else {
            throw .outOfRange(option: String(option.name), argument: String(argument), range: "0...\(configuration.maxDimension)")
        }
        return value
    }

    private static func limit(_ option: Option, to count: Int) throws(ImageService.Error) {
        guard option.arguments.count <= count else {
            throw .tooManyArguments(option: String(option.name), count: option.arguments.count, limit: count)
        }
    }

    /// The first argument, which the option needs.
    private static func first(_ option: Option) throws(ImageService.Error) -> Substring {
        guard let argument = option.arguments.first, !argument.isEmpty else {
            throw .invalidArgument(option: String(option.name), argument: "", expected: "a value")
        }
        return argument
    }

    private static func resizingType(_ argument: Substring, _ option: Option) throws(ImageService.Error) -> ProcessingPlan.ResizingType {
        guard let type = ProcessingPlan.ResizingType(rawValue: String(argument)) else {
            throw .invalidArgument(option: String(option.name), argument: String(argument), expected: "fit, fill, fill-down, force or auto")
        }
        return type
    }

    /// Go's `strconv.ParseBool`, which imgproxy uses; anything else is refused, not taken as false.
    static func boolean(_ argument: Substring, _ option: Option) throws(ImageService.Error) -> Bool {
        switch argument {
        case "1", "t", "T", "true", "TRUE", "True": return true
        case "0", "f", "F", "false", "FALSE", "False": return false
        default:
            throw .invalidArgument(option: String(option.name), argument: String(argument), expected: "a boolean (1, t, true, 0, f, false)")
        }
    }

    /// A finite decimal number; Swift's `Double(_:)` also reads `nan`, `inf` and hex floats,
    /// which no option means.
    static func number(_ argument: Substring, _ option: Option) throws(ImageService.Error) -> Double {
        let isDecimal = !argument.isEmpty && argument.utf8.allSatisfy { character in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(character) || character == UInt8(ascii: ".")
                || character == UInt8(ascii: "-") || character == UInt8(ascii: "+")
        }
        guard isDecimal, let value = Double(argument), value.isFinite else {
            throw .invalidArgument(option: String(option.name), argument: String(argument), expected: "a decimal number")
        }
        return value + 0
    }

    private static func sigma(_ argument: Substring, _ option: Option, limit: Double = maxSigma) throws(ImageService.Error) -> Double? {
        let sigma = try Self.number(argument, option)
        guard sigma >= 0, sigma <= limit else {
            throw .outOfRange(option: String(option.name), argument: String(argument), range: "0...\(format(limit))")
        }
        return sigma == 0 ? nil : sigma
    }

    /// gravity's arguments: %type:%x_offset:%y_offset, `sm` alone, or `fp:%x:%y` in 0...1.
    func gravity(_ arguments: [Substring], _ option: Option, allowSmart: Bool) throws(ImageService.Error) -> Gravity {
        guard let type = arguments.first, !type.isEmpty else {
            throw .invalidArgument(option: String(option.name), argument: "", expected: "a gravity type")
        }
        guard let kind = Gravity.Kind(rawValue: String(type)) else {
            throw .invalidArgument(option: String(option.name), argument: String(type), expected: "a gravity (no, so, ea, we, noea, nowe, soea, sowe, ce, sm, fp)")
        }
        switch kind {
        case .smart:
            guard allowSmart else {
                throw .invalidArgument(option: String(option.name), argument: String(type), expected: "a gravity other than sm")
            }
            guard arguments.count == 1 else {
                throw .tooManyArguments(option: String(option.name), count: arguments.count, limit: 1)
            }
            return Gravity(.smart)
        case .focusPoint:
            guard arguments.count == 3 else {
                throw .invalidArgument(option: String(option.name), argument: arguments.joined(separator: ":"), expected: "fp:%x:%y")
            }
            let x = try Self.number(arguments[1], option)
            let y = try Self.number(arguments[2], option)
            for coordinate in [x, y] where !(0...1).contains(coordinate) {
                throw .outOfRange(option: String(option.name), argument: Self.format(coordinate), range: "0...1")
            }
            return Gravity(.focusPoint, x: x, y: y)
        default:
            guard arguments.count <= 3 else {
                throw .tooManyArguments(option: String(option.name), count: arguments.count, limit: 3)
            }
            let x = arguments.count > 1 && !arguments[1].isEmpty ? try Self.number(arguments[1], option) : 0
            let y = arguments.count > 2 && !arguments[2].isEmpty ? try Self.number(arguments[2], option) : 0
            let limit = Double(configuration.maxDimension)
            for offset in [x, y] where abs(offset) > limit {
                throw .outOfRange(option: String(option.name), argument: Self.format(offset), range: "-\(configuration.maxDimension)...\(configuration.maxDimension)")
            }
            return Gravity(kind, x: x, y: y)
        }
    }

    /// extend's arguments: %extend:%gravity_type:%x_offset:%y_offset, where gravity is never `sm`.
    private func extend(_ arguments: [Substring], _ option: Option, current: ProcessingPlan.Extend) throws(ImageService.Error) -> ProcessingPlan.Extend {
        var extend = current
        if let enabled = arguments.first, !enabled.isEmpty { extend.enabled = try Self.boolean(enabled, option) }
        if arguments.count > 1 {
            extend.gravity = try gravity(Array(arguments[1...]), option, allowSmart: false)
        }
        return extend
    }

    /// background's arguments: %R:%G:%B (0...255 each), %hex_color (six digits), or nothing,
    /// which turns the background off.
    private static func color(_ arguments: [Substring], _ option: Option) throws(ImageService.Error) -> ProcessingPlan.Color? {
        switch arguments.count {
        case 0:
            return nil
        case 1 where arguments[0].isEmpty:
            return nil
        case 1:
            guard arguments[0].utf8.count == 6, let bytes = Hex.bytes(arguments[0], count: 3) else {
                throw .invalidArgument(option: String(option.name), argument: String(arguments[0]), expected: "a hex color of six digits")
            }
            return .init(red: bytes[0], green: bytes[1], blue: bytes[2])
        case 3:
            var channels: [UInt8] = []
            for argument in arguments {
                guard let channel = Int(argument) else {
                    throw .invalidArgument(option: String(option.name), argument: String(argument), expected: "an integer color channel")
                }
                guard (0...255).contains(channel) else {
                    throw .outOfRange(option: String(option.name), argument: String(argument), range: "0...255")
                }
                channels.append(UInt8(channel))
            }
            return .init(red: channels[0], green: channels[1], blue: channels[2])
        default:
            throw .invalidArgument(option: String(option.name), argument: arguments.joined(separator: ":"), expected: "%R:%G:%B or a hex color")
        }
    }

    /// A number as the canonical path spells it: an integral value without ".0".
    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
