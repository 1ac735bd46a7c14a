/// One entry of the gallery's feed, the book's `ImageFile`, as the app reads it.
public struct ImageFile: Codable, Sendable, Hashable, Identifiable {
    /// The emoji's name, e.g. "Grinning Face".
    public var name: String
    /// The image's path on the gallery, e.g. `/gallery/image?3`.
    public var url: String
    /// The price in dollars.
    public var price: Double
    /// `sha256:` and the hex digest of the image's bytes.
    public var checksum: String

    /// Creates an entry.
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
    /// absurd) with a `DecodingError` that names it: nothing downstream has to fear it.
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
    }

    /// The URL identifies the piece; the feed lists each piece three times.
    public var id: String { url }

    /// The piece number in `url` (`/gallery/image?N`), when it has one.
    public var pieceNumber: Int? {
        url.split(separator: "?", maxSplits: 1).last.flatMap { Int($0) }
    }

    /// The price as money: "$1,234.50".
    public var formattedPrice: String {
        // Held to priceRange first (NaN to 0): Int(x) of an unchecked Double traps.
        let amount = price >= Self.priceRange.lowerBound ? min(price, Self.priceRange.upperBound) : Self.priceRange.lowerBound
        let cents = Int((amount * 100).rounded())
        let dollars = String(cents / 100)
        var grouped = ""
        for (offset, digit) in dollars.reversed().enumerated() {
            if offset > 0, offset % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        let fraction = cents % 100
        return "$" + String(grouped.reversed()) + "." + (fraction < 10 ? "0" : "") + String(fraction)
    }
}
