/// An encoded image with its pixel size, as produced by `Imaging`.
public struct EncodedImage: Sendable, Hashable {
    /// The encoded bytes.
    public var data: [UInt8]
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// The MIME type of `data`.
    public var mimeType: String

    /// Creates an encoded image.
    public init(data: [UInt8], width: Int, height: Int, mimeType: String) {
        self.data = data
        self.width = width
        self.height = height
        self.mimeType = mimeType
    }
}
