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

    /// The URL identifies the piece; the feed lists each piece three times.
    public var id: String { url }

    /// The piece number in `url` (`/gallery/image?N`), when it has one.
    public var pieceNumber: Int? {
        url.split(separator: "?", maxSplits: 1).last.flatMap { Int($0) }
    }

    /// The price as money: "$1,234.50".
    public var formattedPrice: String {
        let cents = Int((price * 100).rounded())
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
