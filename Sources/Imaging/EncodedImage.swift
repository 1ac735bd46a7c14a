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

    /// An encoded image of `lent`'s bytes, copied out of libvips' buffer.
    public init(copying lent: EncodedBytes) {
        self.init(data: [UInt8](lent.bytes), width: lent.width, height: lent.height, mimeType: lent.mimeType)
    }
}

/// An encoded image's bytes where libvips wrote them, lent to a closure by the `Imaging` calls
/// that take one (``Imaging/thumbnail(_:fitting:format:_:)``,
/// ``Imaging/thumbnail(of:fitting:format:_:)``): ``bytes`` is valid only during that call, so a
/// caller that keeps the image copies them once, into storage of its own (a server's buffer),
/// instead of into an array first.
public struct EncodedBytes {
    /// The encoded bytes, in libvips' buffer: do not keep the pointer past the closure.
    public let bytes: UnsafeRawBufferPointer
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// The MIME type of ``bytes``.
    public let mimeType: String
}
