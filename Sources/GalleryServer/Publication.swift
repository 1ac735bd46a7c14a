import Crypto
import HTTPCaching
public import Foundation
import Imaging
import MessageSignatures
public import NIOCore
import Synchronization

/// The gallery's art as published at one moment: the bytes of every piece, the feed listing
/// their checksums, and when each last changed. Immutable; `Sendable`. A class: the image route
/// reads the current edition on every request, and a class costs one reference to read.
public final class Edition: Sendable {
    /// 0 for the art the gallery started with, then one more per revision.
    public let revision: Int
    /// What the pieces are.
    public let catalog: ArtCatalog
    /// Every piece by number, missing ones included.
    public let pieces: [ArtStore.Piece]
    /// When each piece's bytes last changed: its `Last-Modified`.
    public let modified: [Date]
    /// ``modified`` as `Last-Modified` fields, formatted once.
    let lastModified: [String]
    /// The pieces the latest revision changed; empty for revision 0.
    public let revisedPieces: [Int]
    /// The feed's JSON.
    public let feed: ByteBuffer
    /// The feed's strong ETag: the SHA-256 of its bytes, so any change gives a new tag.
    public let feedETag: String
    /// When the feed last changed.
    public let feedModified: Date
    /// `Content-Digest` of the feed and of each piece.
    let feedDigest: String
    let imageDigests: [String]

    init(
        revision: Int, seed: UInt64, catalog: ArtCatalog, pieces: [ArtStore.Piece], modified: [Date], revisedPieces: [Int],
        feedModified: Date
    ) throws {
        self.revision = revision
        self.catalog = catalog
        self.pieces = pieces
        self.modified = modified
        lastModified = modified.map(HTTPDate.format)
        self.revisedPieces = revisedPieces
        self.feedModified = feedModified
        imageDigests = pieces.map { ContentDigest.fieldValue(for: $0.png.readableBytesView) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = try encoder.encode(Feed.make(seed: seed, catalog: catalog, checksums: pieces.map(\.checksum)))
        feed = ByteBuffer(bytes: json)
        feedETag = "\"" + Hex.lowercase(SHA256.hash(data: json)) + "\""
        feedDigest = ContentDigest.fieldValue(for: json)
    }
}

/// What the gallery publishes, and its revisions: new art at unchanged URLs.
///
/// The book's gallery never changes, and neither does this one by default. A revision gives
/// ``piecesPerRevision`` pieces new bytes (another palette, the emoji moved), chosen and drawn
/// deterministically from the seed and the revision number; the feed lists their new checksums,
/// so it gets a new ETag too, and their `Last-Modified` is the revision's time. Prices and the
/// feed's order stay as they were.
///
/// Reading the current edition is a mutex lookup; revisions run one at a time on this actor.
public actor Publication {
    /// Pieces changed by one revision.
    public static let piecesPerRevision = 3

    private let seed: UInt64
    private let now: @Sendable () -> Date
    private let state: Mutex<Edition>

    /// Publishes `art` as revision 0, dated `now()`.
    public init(art: ArtStore, seed: UInt64, now: @escaping @Sendable () -> Date) throws {
        self.seed = seed
        self.now = now
        let published = now()
        state = Mutex(try Edition(
            revision: 0, seed: seed, catalog: art.catalog, pieces: art.pieces, modified: Array(repeating: published, count: art.pieces.count),
            revisedPieces: [], feedModified: published
        ))
    }

    /// The edition being served.
    public nonisolated var current: Edition { state.withLock { $0 } }

    /// Publishes the next revision and returns it.
    /// - Throws: `Imaging.Error` when a piece cannot be drawn; the current edition stays.
    @discardableResult
    public func revise() throws -> Edition {
        let previous = current
        let revision = previous.revision + 1
        let chosen = Self.pieces(revisedIn: revision, seed: seed, catalog: previous.catalog)
        let renderer = ArtRenderer()
        var pieces = previous.pieces
        var modified = previous.modified
        let date = now()
        for number in chosen {
            // Another palette than the piece's own, and the emoji lower each revision, so every
            // revision of a piece has new bytes.
            let palette = ArtRenderer.Palette(piece: number + 1 + revision % 2)
            let shift = 16 * (revision % 12 + 1) - 96
            let png = try renderer.render(emoji: String(previous.catalog.emoji[number]), palette: palette, shift: shift == 0 ? 112 : shift)
            pieces[number] = ArtStore.Piece(png: ByteBuffer(bytes: png), sha256: Hex.lowercase(SHA256.hash(data: png)))
            modified[number] = date
        }
        let edition = try Edition(
            revision: revision, seed: seed, catalog: previous.catalog, pieces: pieces, modified: modified, revisedPieces: chosen, feedModified: date
        )
        state.withLock { $0 = edition }
        return edition
    }

    /// The pieces revision `revision` changes: ``piecesPerRevision`` distinct served pieces.
    static func pieces(revisedIn revision: Int, seed: UInt64, catalog: ArtCatalog = .book) -> [Int] {
        var random = SeededRandom(seed: seed ^ (UInt64(truncatingIfNeeded: revision) &* 0xD1B5_4A32_D192_ED03))
        return Array(catalog.served.shuffled(using: &random).prefix(piecesPerRevision)).sorted()
    }
}
