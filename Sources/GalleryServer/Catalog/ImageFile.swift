/// One entry of the feed at `GET /gallery/images`, the book's `ImageFile`.
public struct ImageFile: Codable, Sendable, Hashable {
    /// The emoji's Unicode name, e.g. "Grinning Face".
    public var name: String
    /// Where the image is served, relative to the server: `/gallery/image?N`.
    public var url: String
    /// The price, 5...1000, with two decimals.
    public var price: Double
    /// `sha256:` followed by the lowercase hex SHA-256 of the exact bytes `url` serves.
    public var checksum: String

    /// Creates a feed entry.
    public init(name: String, url: String, price: Double, checksum: String) {
        self.name = name
        self.url = url
        self.price = price
        self.checksum = checksum
    }
}
