import Foundation
import NIOCore
import NIOPosix

/// One HTTP/1.1 answer as it came off the wire.
public struct RawHTTPResponse: Sendable, Equatable, CustomStringConvertible {
    /// The status code.
    public var status: Int
    /// The header fields in the order they were sent, names lowercased.
    public var fields: [Field]
    /// The body.
    public var body: [UInt8]

    /// One header field.
    public struct Field: Sendable, Equatable, CustomStringConvertible {
        public var name: String
        public var value: String
        public var description: String { "\(name): \(value)" }
    }

    /// Status, fields and the body's length: what a failed expectation shows.
    public var description: String { "\(status) \(fields) (\(body.count) bytes)" }

    /// The first value of the field `name` (lowercase).
    public subscript(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// The same answer without the fields named (lowercase), such as `date`.
    public func without(_ names: Set<String>) -> RawHTTPResponse {
        var copy = self
        copy.fields.removeAll { names.contains($0.name) }
        return copy
    }
}

/// A TCP connection to a local server that sends bytes as given and reads answers as they came,
/// for tests that need what a browser or nginx cannot show: exact bytes, pipelining, closing.
public final class RawHTTPConnection: @unchecked Sendable {
    // Used by one test task at a time, inside `with(port:_:)`.
    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private let writer: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private var buffer: [UInt8] = []
    private var ended = false

    private init(inbound: NIOAsyncChannelInboundStream<ByteBuffer>, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
        self.iterator = inbound.makeAsyncIterator()
        self.writer = outbound
    }

    /// Connects to `127.0.0.1:port` (from the address `source`, another of the loopback's, when
    /// given), runs `body` with the connection, then closes it.
    public static func with<T: Sendable>(
        port: Int, from source: String? = nil, _ body: (RawHTTPConnection) async throws -> T
    ) async throws -> T {
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
        let channel = try await bootstrap
            .channelOption(.allowRemoteHalfClosure, value: true)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(RawHTTPConnection(inbound: inbound, outbound: outbound))
        }
    }

    /// Sends `text` in one write (`\n` is sent as `\r\n`).
    public func send(_ text: String) async throws {
        try await writer.write(ByteBuffer(string: text.replacingOccurrences(of: "\n", with: "\r\n")))
    }

    /// Sends `GET`s (or other requests) of `paths`, each with `fields`, in one write; with
    /// `Host: 127.0.0.1` unless `fields` has a `Host` of its own.
    public func send(_ paths: [String], method: String = "GET", fields: [String] = []) async throws {
        let hasHost = fields.contains { $0.lowercased().hasPrefix("host:") }
        let host = hasHost ? "" : "Host: 127.0.0.1\n"
        try await send(paths.map { "\(method) \($0) HTTP/1.1\n\(host)" + fields.map { $0 + "\n" }.joined() + "\n" }.joined())
    }

    /// Reads the next answer; `head` says the request was a `HEAD` (no body follows).
    /// `nil` when the server closed the connection before one began.
    public func response(head: Bool = false) async throws -> RawHTTPResponse? {
        while true {
            if let (response, used) = try Self.parse(buffer, head: head) {
                buffer.removeFirst(used)
                return response
            }
            guard !ended, let bytes = try await iterator.next() else {
                ended = true
                if buffer.isEmpty { return nil }
                throw RawHTTPError("the connection closed within an answer: \(String(decoding: buffer.prefix(200), as: UTF8.self))")
            }
            buffer += bytes.readableBytesView
        }
    }

    /// Waits until the server closes the connection; returns the bytes that came before.
    public func closed() async throws -> [UInt8] {
        while !ended, let bytes = try await iterator.next() { buffer += bytes.readableBytesView }
        ended = true
        return buffer
    }

    /// An answer at the start of `bytes` and its length, or `nil` when it is not all there.
    static func parse(_ bytes: [UInt8], head: Bool) throws -> (RawHTTPResponse, Int)? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.dropLast(3).first(where: { bytes[$0..<($0 + 4)].elementsEqual(separator) }) else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines[0].split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw RawHTTPError("not a status line: \(lines[0])") }
        let fields = lines.dropFirst().map { line in
            let colon = line.firstIndex(of: ":") ?? line.endIndex
            return RawHTTPResponse.Field(
                name: line[..<colon].lowercased(),
                value: line[colon...].dropFirst().trimmingCharacters(in: .whitespaces)
            )
        }
        let length = (head || status == 304 || status == 204) ? 0 : Int(fields.first { $0.name == "content-length" }?.value ?? "0") ?? 0
        let start = end + 4
        guard bytes.count >= start + length else { return nil }
        return (RawHTTPResponse(status: status, fields: fields, body: Array(bytes[start..<(start + length)])), start + length)
    }
}

/// A malformed or cut answer.
public struct RawHTTPError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
