public import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// A real HTTP origin on 127.0.0.1 for cache tests: serves `/images/NAME` as told, counts every
/// request per path, and can fail, stall or stream an endless body on demand.
public final class TestOrigin: Sendable {
    /// How `/images/NAME` answers.
    public enum Behavior: Sendable {
        /// 200 with these bytes.
        case image([UInt8], contentType: String = "image/png")
        /// This status with a short JSON body.
        case status(Int)
        /// Answers 200 with these bytes once `gate` opens: a server that does not answer until
        /// the test lets it.
        case held(Gate, [UInt8])
        /// 200 without a Content-Length, `chunks` writes of `chunk` bytes, as fast as the client
        /// reads them.
        case stream(chunk: Int, chunks: Int)
    }

    private let behaviors = Mutex<[String: Behavior]>([:])
    private let counts = Mutex<[String: Int]>([:])
    private let streamed = Mutex(0)
    private let streamEnds: AsyncStream<Int>
    private let streamEnded: AsyncStream<Int>.Continuation

    public init() {
        (streamEnds, streamEnded) = AsyncStream.makeStream(of: Int.self)
    }

    /// Waits until a `.stream` body has ended (written whole, or stopped because the client went
    /// away) and returns the bytes streamed by then.
    public func nextStreamEnd() async -> Int? {
        var iterator = streamEnds.makeAsyncIterator()
        return await iterator.next()
    }

    /// Sets how `/images/<name>` answers.
    public func set(_ name: String, _ behavior: Behavior) {
        behaviors.withLock { $0[name] = behavior }
    }

    /// Requests received for `/images/<name>`.
    public func requests(_ name: String) -> Int {
        counts.withLock { $0[name] ?? 0 }
    }

    /// Requests received for every path.
    public var totalRequests: Int {
        counts.withLock { $0.values.reduce(0, +) }
    }

    /// Bytes written by `.stream` bodies so far.
    public var streamedBytes: Int { streamed.withLock { $0 } }

    /// Runs the origin until `body` returns; `body` gets the base URL, e.g. `http://127.0.0.1:PORT`.
    public func run<T: Sendable>(_ body: (URL) async throws -> T) async throws -> T {
        let router = Router()
        router.get("images/:name") { request, context -> Response in
            let name = context.parameters.get("name") ?? ""
            self.counts.withLock { $0[name, default: 0] += 1 }
            switch self.behaviors.withLock({ $0[name] }) {
            case nil:
                return Response(status: .notFound)
            case let .image(bytes, contentType):
                return Response(status: .ok, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            case let .status(code):
                return Response(status: .init(code: code), body: .init(byteBuffer: ByteBuffer(string: "{\"error\":\(code)}")))
            case let .held(gate, bytes):
                try await gate.pass()
                return Response(status: .ok, headers: [.contentType: "image/png"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            case let .stream(chunk, chunks):
                let buffer = ByteBuffer(repeating: 0x42, count: chunk)
                return Response(status: .ok, headers: [.contentType: "image/png"], body: ResponseBody { writer in
                    defer { self.streamEnded.yield(self.streamedBytes) }
                    for _ in 0..<chunks {
                        try await writer.write(buffer)
                        self.streamed.withLock { $0 += chunk }
                    }
                    try await writer.finish(nil)
                })
            }
        }
        return try await withLiveServer({ onRunning in
            Application(
                router: router,
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await onRunning($0.localAddress?.port ?? 0) }
            )
        }) { port in
            try await body(URL(string: "http://127.0.0.1:\(port)")!)
        }
    }
}
