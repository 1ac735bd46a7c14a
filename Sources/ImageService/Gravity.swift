/// imgproxy's gravity: where to cut (or extend, or place) when the result needs it.
public struct Gravity: Sendable, Hashable {
    /// The gravity's kind, with imgproxy's abbreviation as its raw value.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Top edge.
        case north = "no"
        /// Bottom edge.
        case south = "so"
        /// Right edge.
        case east = "ea"
        /// Left edge.
        case west = "we"
        /// Top-right corner.
        case northEast = "noea"
        /// Top-left corner.
        case northWest = "nowe"
        /// Bottom-right corner.
        case southEast = "soea"
        /// Bottom-left corner.
        case southWest = "sowe"
        /// Center.
        case center = "ce"
        /// The most interesting part, found by libvips; takes no offsets.
        case smart = "sm"
        /// A focus point at (``Gravity/x``, ``Gravity/y``), each in 0...1.
        case focusPoint = "fp"
    }

    /// The kind.
    public var kind: Kind
    /// The X offset in pixels, or the focus point's X in 0...1.
    public var x: Double
    /// The Y offset in pixels, or the focus point's Y in 0...1.
    public var y: Double

    /// A gravity of a kind with offsets (or focus point coordinates).
    public init(_ kind: Kind, x: Double = 0, y: Double = 0) {
        self.kind = kind
        self.x = x + 0  // -0.0 is 0.0: one value, one spelling
        self.y = y + 0
    }

    /// Center, no offsets: imgproxy's default.
    public static let center = Gravity(.center)
}
