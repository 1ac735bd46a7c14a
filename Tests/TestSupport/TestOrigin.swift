public import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// A real HTTP origin on 127.0.0.1 for cache tests: serves `/images/NAME` as told, counts every
/// request per path, and can fail, stall or stream an endless body on demand.
///
/// Images go out as a well-behaved origin sends them: with `Cache-Control` (`max-age=3600`
/// unless the test sets another with ``setCacheControl(_:)``) and a strong ETag of their bytes;
/// an `If-None-Match` that matches is answered 304, counted by ``notModified(_:)``.
public final class TestOrigin: Sendable {
    /// How `/images/NAME` answers.
    public enum Behavior: Sendable {
        /// 200 with these bytes.
        case image([UInt8], contentType: String = "image/png")
        /// This status with a short JSON body.
        case status(Int)
        /// This status with a short JSON body and this `Cache-Control` (a 404 with a lifetime).
        case statusWithCacheControl(Int, String)
        /// Answers 200 with these bytes once `gate` opens: a server that does not answer until
        /// the test lets it.
        case held(Gate, [UInt8])
        /// 200 without a Content-Length, `chunks` writes of `chunk` bytes, as fast as the client
        /// reads them.
        case stream(chunk: Int, chunks: Int)
        /// 200 declaring `declared` bytes, of which it sends `sent`, then nothing until `gate`
        /// opens: a body that stalls (an origin that hangs, or a connection a NAT dropped).
        case stalledBody(Gate, sent: [UInt8], declared: Int)
        /// This 3xx status with `Location: location` (absolute or relative) and no body.
        case redirect(to: String, status: Int = 302)
    }

    private let behaviors = Mutex<[String: Behavior]>([:])
    private let counts = Mutex<[String: Int]>([:])
    private let notModifiedCounts = Mutex<[String: Int]>([:])
    private let cacheControl = Mutex<String?>("max-age=3600")
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

    /// Requests for `/images/<name>` answered 304.
    public func notModified(_ name: String) -> Int {
        notModifiedCounts.withLock { $0[name] ?? 0 }
    }

    /// Sets the `Cache-Control` sent with images from now on; `nil` sends none.
    public func setCacheControl(_ value: String?) {
        cacheControl.withLock { $0 = value }
    }

    /// The strong ETag the origin sends for `bytes`: FNV-1a of the bytes, quoted.
    public static func etag(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return "\"\(String(hash, radix: 16))-\(bytes.count)\""
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
                let etag = Self.etag(bytes)
                var headers: HTTPFields = [.contentType: contentType, .eTag: etag]
                if let value = self.cacheControl.withLock({ $0 }) { headers[.cacheControl] = value }
                if let tags = request.headers[.ifNoneMatch], tags.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag }) {
                    self.notModifiedCounts.withLock { $0[name, default: 0] += 1 }
                    return Response(status: .notModified, headers: headers)
                }
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            case let .status(code):
                return Response(status: .init(code: code), body: .init(byteBuffer: ByteBuffer(string: "{\"error\":\(code)}")))
            case let .statusWithCacheControl(code, cacheControl):
                return Response(
                    status: .init(code: code), headers: [.cacheControl: cacheControl],
                    body: .init(byteBuffer: ByteBuffer(string: "{\"error\":\(code)}"))
                )
            case let .held(gate, bytes):
                try await gate.pass()
                var headers: HTTPFields = [.contentType: "image/png", .eTag: Self.etag(bytes)]
                if let value = self.cacheControl.withLock({ $0 }) { headers[.cacheControl] = value }
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            case let .stalledBody(gate, sent, declared):
                return Response(
                    status: .ok, headers: [.contentType: "image/png", .contentLength: "\(declared)"],
                    body: ResponseBody { writer in
                        try await writer.write(ByteBuffer(bytes: sent))
                        try await gate.pass()
                        try await writer.finish(nil)
                    }
                )
            case let .redirect(location, status):
                return Response(status: .init(code: status), headers: [.location: location])
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
