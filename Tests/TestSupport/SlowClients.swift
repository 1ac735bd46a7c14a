import Foundation
public import NIOCore
import NIOPosix

extension RawHTTPConnection {
    /// Sends `text` one byte at a time, one every `interval`, as a slow client (slowloris) does,
    /// until all is sent, the task is cancelled or the server closes the connection. The pace is
    /// what the client does, never what a test waits on: a test waits for the server's answer
    /// or close.
    public func trickle(_ text: String, every interval: Duration = .milliseconds(100)) async {
        for byte in text.utf8 {
            guard (try? await send(String(decoding: [byte], as: UTF8.self))) != nil else { return }
            guard (try? await Task.sleep(for: interval)) != nil else { return }
        }
    }

    /// Waits until the server ends the connection, by closing it or, as a client still sending to
    /// a closed socket may see first, by a reset; returns the bytes that came before a close,
    /// `nil` after a reset.
    public func cutOff() async throws -> [UInt8]? {
        do {
            return try await closed()
        } catch let error as IOError where error.errnoCode == ECONNRESET {
            return nil
        }
    }

    /// Sends `GET path` with `Host: 127.0.0.1` and reads its answer's status; `nil` when the
    /// server closed the connection instead.
    public func status(of path: String) async throws -> Int? {
        try await send([path])
        return try await response()?.status
    }
}

/// What a server capped at three connections did with a fourth (``RawHTTPConnection/pastACapOfThree(port:path:)``).
public struct PastTheCap: Sendable {
    /// The statuses of `path` on the three connections before the fourth, then after it.
    public var before: [Int?], after: [Int?]
    /// What the fourth connection received before it was closed.
    public var fourth: [UInt8]
    /// `/metrics`, read on the first connection afterwards (`nil`: no answer).
    public var metrics: String?
}

extension RawHTTPConnection {
    /// Opens three connections to a server capped at three (`--max-connections 3`), asks each
    /// for `path`, opens a fourth and waits for the server to close it, asks the three again, and
    /// reads `/metrics` on the first.
    public static func pastACapOfThree(port: Int, path: String) async throws -> PastTheCap {
        try await with(port: port) { first in
            try await with(port: port) { second in
                try await with(port: port) { third in
                    var before: [Int?] = [], after: [Int?] = []
                    for connection in [first, second, third] { before.append(try await connection.status(of: path)) }
                    let fourth = try await with(port: port) { try await $0.closed() }
                    for connection in [first, second, third] { after.append(try await connection.status(of: path)) }
                    try await first.send(["/metrics"])
                    let metrics = try await first.response().map { String(decoding: $0.body, as: UTF8.self) }
                    return PastTheCap(before: before, after: after, fourth: fourth, metrics: metrics)
                }
            }
        }
    }
}

/// A client that sends a request and then reads nothing: its socket never reads (no auto-read)
/// and receives into a small buffer, so the server's writes soon find the kernel's buffers full.
public enum NonReadingClient {
    /// Connects to `127.0.0.1:port` and sends `request` (`\n` as `\r\n`); returns the connection,
    /// which the caller closes.
    public static func send(_ request: String, port: Int) async throws -> any Channel {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.autoRead, value: false)
            .channelOption(.socketOption(.so_rcvbuf), value: 4096)
            .connect(host: "127.0.0.1", port: port).get()
        try await channel.writeAndFlush(ByteBuffer(string: request.replacingOccurrences(of: "\n", with: "\r\n")))
        return channel
    }
}
