/// The gallery's pieces of emoji art. The book's gallery has 29: piece `N` is emoji `N`, on
/// palette `N % 3`; pieces 0, 10 and 20 are listed in the feed but deliberately missing.
///
/// A larger gallery (`emojiart gallery --pieces N`, a load generator) keeps the book's 29 first
/// and draws the rest from further emoji in Unicode order (single scalars with emoji
/// presentation, skin-tone modifiers and regional indicators left out), each named by its
/// Unicode name and on the same three palettes; every piece whose number is a multiple of 10
/// stays missing. `Sendable`.
public struct ArtCatalog: Sendable, Hashable {
    /// The book's 29 emoji, one per piece: single Unicode scalars with emoji presentation.
    public static let bookEmoji: [Character] = [
        "😀", "🎨", "🐸", "🦊", "🐙", "🌵", "🍕", "🚀", "🌈", "🎸",
        "🦄", "🍩", "🐢", "🌻", "🎃", "🐳", "🍉", "🦉", "🔥", "🌙",
        "🍄", "🐝", "🎈", "🦋", "🍓", "🐧", "🌮", "🎲", "👾",
    ]

    /// The book's gallery: 29 pieces.
    public static let book = ArtCatalog(uncheckedPieces: bookEmoji.count)

    /// Every emoji a piece can be: the book's, then the others in Unicode order.
    public static let allEmoji: [Character] = {
        let book = Set(bookEmoji.map { $0.unicodeScalars.first! })
        let further = (0...0x10FFFF).lazy.compactMap(Unicode.Scalar.init).filter { scalar in
            let properties = scalar.properties
            return properties.isEmojiPresentation && !properties.isEmojiModifier
                && !(0x1F1E6...0x1F1FF).contains(scalar.value)  // regional indicators: half a flag
                && properties.name != nil && !book.contains(scalar)
        }
        return bookEmoji + further.map(Character.init)
    }()

    /// The most pieces a gallery can have: one per emoji.
    public static var maxPieces: Int { allEmoji.count }

    /// One emoji per piece.
    public let emoji: [Character]
    /// Pieces listed in the feed whose image answers 404: every tenth, as in the book.
    public let missing: Set<Int>

    /// A gallery of `pieces` pieces.
    /// - Throws: ``Error/pieceCount(_:max:)`` outside `1...maxPieces`.
    public init(pieces: Int) throws(Error) {
        guard (1...Self.maxPieces).contains(pieces) else { throw .pieceCount(pieces, max: Self.maxPieces) }
        self.init(uncheckedPieces: pieces)
    }

    private init(uncheckedPieces pieces: Int) {
        emoji = Array((pieces <= Self.bookEmoji.count ? Self.bookEmoji : Self.allEmoji).prefix(pieces))
        missing = Set(stride(from: 0, to: pieces, by: 10))
    }

    /// Number of pieces: valid piece numbers are `0..<count`.
    public var count: Int { emoji.count }

    /// Piece numbers that serve an image.
    public var served: [Int] { (0..<count).filter { !missing.contains($0) } }

    /// The emoji's Unicode name, capitalised: "Grinning Face" for 😀.
    public func name(of piece: Int) -> String {
        let scalar = emoji[piece].unicodeScalars.first!
        let upper = scalar.properties.name ?? "Emoji \(piece)"
        return upper.split(separator: " ").map { $0.prefix(1) + $0.dropFirst().lowercased() }.joined(separator: " ")
    }

    /// A catalog that cannot be made.
    public enum Error: Swift.Error, Hashable, CustomStringConvertible {
        /// A piece count outside `1...max`.
        case pieceCount(Int, max: Int)

        public var description: String {
            switch self {
            case let .pieceCount(count, max):
                "a gallery has 1 to \(max) pieces (one per emoji with emoji presentation), not \(count)"
            }
        }
    }
}
