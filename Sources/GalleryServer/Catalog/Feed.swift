public import GalleryFeed
/// Builds the feed: every piece listed three times, shuffled, each entry with its own price.
public enum Feed {
    /// How often each piece appears in the feed, as in the book.
    public static let copiesPerPiece = 3

    /// The feed for `seed`, deterministic: the same seed gives the same JSON every start.
    /// - Parameters:
    ///   - catalog: the pieces; the book's 29 by default.
    ///   - checksums: `sha256:` checksum of each piece, indexed by piece number.
    public static func make(seed: UInt64, catalog: ArtCatalog = .book, checksums: [String]) -> [ImageFile] {
        var random = SeededRandom(seed: seed)
        var entries: [ImageFile] = []
        entries.reserveCapacity(catalog.count * copiesPerPiece)
        for _ in 0..<copiesPerPiece {
            for piece in 0..<catalog.count {
                let cents = Int.random(in: 500...100_000, using: &random)
                entries.append(ImageFile(
                    name: catalog.name(of: piece),
                    url: "/gallery/image?\(piece)",
                    price: Double(cents) / 100,
                    checksum: checksums[piece]
                ))
            }
        }
        entries.shuffle(using: &random)
        return entries
    }
}
