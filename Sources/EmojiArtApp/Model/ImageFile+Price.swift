public import GalleryFeed

extension ImageFile {
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
