import Crypto
import HTTPCaching
import Imaging
public import NIOCore
import NIOPosix
import Synchronization

/// The rendered art of every piece, in memory, with checksums.
///
/// Rendering is deterministic, so it happens once per process and catalog: every `ArtStore` of
/// one catalog shares one render of all its pieces, done in parallel on first use, on NIO's
/// blocking-work threads: libvips holds a thread for each piece, which must not be one of the
/// few threads every task and server of the process shares. Immutable after creation;
/// `Sendable`.
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

    /// What was rendered.
    public let catalog: ArtCatalog
    /// Every piece by number, including the missing ones (their checksum says what they would be).
    public let pieces: [Piece]
    /// How long rendering took, for the log.
    public let renderTime: Duration

    /// Returns the process-wide render of `catalog`, rendering it on the first call.
    /// - Throws: `Imaging.Error` when libvips or the emoji font is unavailable.
    public static func load(_ catalog: ArtCatalog = .book) async throws -> ArtStore {
        let render = renders.withLock { renders in
            if let render = renders[catalog.count] { return render }
            let render = Task { try await Self.render(catalog) }
            renders[catalog.count] = render
            return render
        }
        return try await render.value
    }

    /// One render per catalog size (a catalog is fixed by its size).
    private static let renders = Mutex<[Int: Task<ArtStore, any Error>]>([:])

    private static func render(_ catalog: ArtCatalog) async throws -> ArtStore {
        let clock = ContinuousClock()
        let start = clock.now
        let renderer = ArtRenderer()
        let pieces = try await withThrowingTaskGroup(of: (Int, Piece).self) { group in
            // A few at a time: a large gallery renders in parallel without a task per piece.
            var next = 0
            func addNext() {
                guard next < catalog.count else { return }
                let piece = next
                next += 1
                group.addTask {
                    try await NIOThreadPool.singleton.runIfActive {
                        let png = try renderer.render(emoji: String(catalog.emoji[piece]), palette: .init(piece: piece))
                        let digest = Hex.lowercase(SHA256.hash(data: png))
                        return (piece, Piece(png: ByteBuffer(bytes: png), sha256: digest))
                    }
                }
            }
            for _ in 0..<8 { addNext() }
            var byNumber = [Piece?](repeating: nil, count: catalog.count)
            for try await (number, piece) in group {
                byNumber[number] = piece
                addNext()
            }
            return byNumber.map { $0! }
        }
        return ArtStore(catalog: catalog, pieces: pieces, renderTime: start.duration(to: clock.now))
    }
}
