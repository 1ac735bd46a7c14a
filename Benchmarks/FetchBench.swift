import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hummingbird
import ImageCache

/// The default fetcher's client: AsyncHTTPClient (what `HTTPImageFetcher` uses) against
/// Foundation's URLSession, fetching the same 30 KB image from a local server.
enum FetchBench {
    static func run(seconds: Double) async throws {
        print("## Fetching a 30 KB image from 127.0.0.1 (µs/request; lower is better)\n")
        let body = ByteBuffer(bytes: (0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let router = Router()
        router.get("image") { _, _ in Response(status: .ok, headers: [.contentType: "image/png"], body: .init(byteBuffer: body)) }
        try await HTTPBench.withLocalServer(router) { port in
            try await measure(URL(string: "http://127.0.0.1:\(port)/image")!, seconds: seconds)
        }
    }

    static func measure(_ url: URL, seconds: Double) async throws {
        let fetcher = HTTPImageFetcher()
        let session = URLSession(configuration: .ephemeral)

        let viaAHC: @Sendable () async throws -> Void = { _ = try await fetcher.fetch(ImageRequest(url: url)) }
        let viaSession: @Sendable () async throws -> Void = {
            let (data, response) = try await session.data(from: url)
            guard (response as? HTTPURLResponse)?.statusCode == 200, data.count == 30_000 else { throw BenchError("bad answer") }
        }
        var rows: [[String]] = []
        for (name, fetch) in [("AsyncHTTPClient (HTTPImageFetcher)", viaAHC), ("URLSession", viaSession)] {
            let sequential = try await Bench.millisecondsPerOp(seconds: seconds) { try await fetch() } * 1000
            let concurrent = try await Bench.millisecondsPerOp(seconds: seconds) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 { group.addTask { try await fetch() } }
                    try await group.waitForAll()
                }
            } * 1000 / 8
            rows.append([name, Bench.format(sequential, 0), Bench.format(concurrent, 0)])
        }
        Bench.table(["client", "one at a time", "8 at once (per request)"], rows)
    }
}
