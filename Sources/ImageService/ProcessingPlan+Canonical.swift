import HTTPCaching
extension ProcessingPlan {
    /// The plan as one imgproxy path after the signature, options in a fixed order with their
    /// short names, every value spelled one way and the source percent-encoded after `/plain/`:
    /// equal plans have equal paths, so it serves as a cache key, and it decodes back to this plan.
    public var canonicalPath: String {
        var parts: [String] = [
            "rt:\(resizingType.rawValue)",
            "w:\(width)",
            "h:\(height)",
            "dpr:\(RequestDecoder.format(dpr))",
            "el:\(enlarge ? 1 : 0)",
            "ex:\(extend.enabled ? 1 : 0):\(extend.gravity.canonical)",
            "g:\(gravity.canonical)",
        ]
        if let crop {
            var part = "c:\(RequestDecoder.format(crop.width)):\(RequestDecoder.format(crop.height))"
            if let gravity = crop.gravity { part += ":" + gravity.canonical }
            parts.append(part)
        }
        if let quality { parts.append("q:\(quality)") }
        if let background {
            parts.append("bg:" + Hex.lowercase([background.red, background.green, background.blue]))
        }
        if let blur { parts.append("bl:\(RequestDecoder.format(blur))") }
        if let sharpen { parts.append("sh:\(RequestDecoder.format(sharpen))") }
        if rotate != 0 { parts.append("rot:\(rotate)") }
        if let autoRotate { parts.append("ar:\(autoRotate ? 1 : 0)") }
        if let stripMetadata { parts.append("sm:\(stripMetadata ? 1 : 0)") }
        if let cacheBuster { parts.append("cb:" + PercentEncoding.encode(cacheBuster)) }
        if let expires { parts.append("exp:\(expires)") }
        if let filename { parts.append("fn:" + Base64URL.encode(Array(filename.utf8)) + ":1") }
        var path = "/" + parts.joined(separator: "/") + "/plain/" + PercentEncoding.encode(source)
        if let format { path += "@" + format.rawValue }
        return path
    }
}

extension Gravity {
    /// The gravity as the canonical path spells it: `sm`, `fp:x:y`, or the type with both offsets.
    var canonical: String {
        switch kind {
        case .smart: "sm"
        default: "\(kind.rawValue):\(RequestDecoder.format(x)):\(RequestDecoder.format(y))"
        }
    }
}
