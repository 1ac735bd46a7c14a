import Crypto
import Imaging
public import NIOCore

/// The rendered art of every piece, in memory, with checksums.
///
/// Rendering is deterministic, so it happens once per process: every `ArtStore` shares one
/// render of all pieces, done in parallel on first use. Immutable after creation; `Sendable`.
public struct ArtStore: Sendable {
    /// One rendered piece.
    public struct Piece: Sendable {
        /// The PNG bytes, ready to write to a socket.
        public let png: ByteBuffer
        /// Lowercase hex SHA-256 of `png`.
        public let sha256: String
        /// `sha256:` + ``sha256``, as the feed lists it.
        public var checksum: String { "sha256:\(sha256)" }
        /// The strong ETag, quoted.
        public var etag: String { "\"\(sha256)\"" }
    }

    /// Every piece by number, including the missing ones (their checksum says what they would be).
    public let pieces: [Piece]
    /// How long rendering took, for the log.
    public let renderTime: Duration

    /// Returns the process-wide render, rendering it on the first call.
    /// - Throws: `Imaging.Error` when libvips or the emoji font is unavailable.
    public static func load() async throws -> ArtStore {
        try await shared.value
    }

    private static let shared = Task<ArtStore, any Error> {
        let clock = ContinuousClock()
        let start = clock.now
        let renderer = ArtRenderer()
        let pieces = try await withThrowingTaskGroup(of: (Int, Piece).self) { group in
            for piece in 0..<ArtCatalog.count {
                group.addTask {
                    let png = try renderer.render(emoji: String(ArtCatalog.emoji[piece]), palette: .init(piece: piece))
                    let digest = SHA256.hash(data: png).hexDigest
                    return (piece, Piece(png: ByteBuffer(bytes: png), sha256: digest))
                }
            }
            var byNumber = [Piece?](repeating: nil, count: ArtCatalog.count)
            for try await (number, piece) in group { byNumber[number] = piece }
            return byNumber.map { $0! }
        }
        return ArtStore(pieces: pieces, renderTime: start.duration(to: clock.now))
    }
}
