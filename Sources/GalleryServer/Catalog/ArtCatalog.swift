/// The gallery's 29 pieces of emoji art, as in the book's server: piece `N` is emoji `N`, on
/// palette `N % 3`; pieces 0, 10 and 20 are listed in the feed but deliberately missing.
public enum ArtCatalog {
    /// One emoji per piece, single Unicode scalars with emoji presentation.
    public static let emoji: [Character] = [
        "😀", "🎨", "🐸", "🦊", "🐙", "🌵", "🍕", "🚀", "🌈", "🎸",
        "🦄", "🍩", "🐢", "🌻", "🎃", "🐳", "🍉", "🦉", "🔥", "🌙",
        "🍄", "🐝", "🎈", "🦋", "🍓", "🐧", "🌮", "🎲", "👾",
    ]

    /// Number of pieces: valid piece numbers are `0..<count`.
    public static var count: Int { emoji.count }

    /// Pieces listed in the feed whose image answers 404, as in the book.
    public static let missing: Set<Int> = [0, 10, 20]

    /// Piece numbers that serve an image.
    public static var served: [Int] { (0..<count).filter { !missing.contains($0) } }

    /// The emoji's Unicode name, capitalised: "Grinning Face" for 😀.
    public static func name(of piece: Int) -> String {
        let scalar = emoji[piece].unicodeScalars.first!
        let upper = scalar.properties.name ?? "Emoji \(piece)"
        return upper.split(separator: " ").map { $0.prefix(1) + $0.dropFirst().lowercased() }.joined(separator: " ")
    }
}
