/// One entry of the feed at `GET /gallery/images`, the book's `ImageFile`: the wire type the
/// gallery writes and the app reads, defined once.
public struct ImageFile: Codable, Sendable, Hashable, Identifiable {
    /// The emoji's Unicode name, e.g. "Grinning Face".
    public var name: String
    /// Where the image is served, relative to the server: `/gallery/image?N`.
    public var url: String
    /// The price in dollars: the gallery's are 5...1000 with two decimals; any feed's decode only
    /// within ``priceRange``.
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

    /// The prices a feed entry may carry, in dollars: finite, not negative, at most a million.
    /// A feed read from a file or the network with another price does not decode.
    public static let priceRange: ClosedRange<Double> = 0...1_000_000

    private enum CodingKeys: String, CodingKey {
        case name, url, price, checksum
    }

    /// Decodes an entry, refusing a price outside ``priceRange`` (NaN, infinite, negative or
    /// absurd) and a checksum that is not `sha256:` and 64 hex digits, with a `DecodingError` that
    /// names it: nothing downstream has to fear them (a checksum is compared, stored and logged).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        url = try container.decode(String.self, forKey: .url)
        checksum = try container.decode(String.self, forKey: .checksum)
        price = try container.decode(Double.self, forKey: .price)
        guard Self.priceRange.contains(price) else {
            throw DecodingError.dataCorruptedError(
                forKey: .price, in: container,
                debugDescription: "the price of \(url) is \(price), not an amount within 0...1000000 dollars"
            )
        }
        guard Self.isChecksum(checksum) else {
            throw DecodingError.dataCorruptedError(
                forKey: .checksum, in: container,
                debugDescription: "the checksum of entry \(url.debugDescription.prefix(200)) is not sha256: and 64 hex digits"
            )
        }
    }

    /// Whether `text` is `sha256:` followed by 64 hex digits.
    public static func isChecksum(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == 71, utf8.starts(with: "sha256:".utf8) else { return false }
        return utf8.dropFirst(7).allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) || (0x41...0x46).contains(byte)
        }
    }

    /// The URL identifies the piece; the feed lists each piece three times.
    public var id: String { url }

    /// The piece number in `url` (`/gallery/image?N`), when it has one.
    public var pieceNumber: Int? {
        url.split(separator: "?", maxSplits: 1).last.flatMap { Int($0) }
    }
}
