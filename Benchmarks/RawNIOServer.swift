import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The Swift limit for the fast lane's bench: a minimal SwiftNIO HTTP/1.1 server, NIO's own
/// pipeline and one handler answering `GET` from a dictionary of paths to bytes, as small as a
/// server can be. Run as a child process (`emojiart-bench --serve-raw-nio DIR`) so it can be
/// pinned to a CPU of its own.
enum RawNIOServer {
    /// Serves every file under `directory` at `/` + its relative path (a file named
    /// `gallery/image?5` answers `/gallery/image?5`), prints `raw-nio: http://127.0.0.1:PORT`,
    /// and runs until killed.
    static func serve(_ directory: String) async throws -> Never {
        var files: [String: ByteBuffer] = [:]
        let root = URL(fileURLWithPath: directory)
        for case let path as String in FileManager.default.enumerator(atPath: directory) ?? .init() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            files["/" + path] = ByteBuffer(bytes: try Data(contentsOf: root.appendingPathComponent(path)))
        }
        let answers = files
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false)
                    try channel.pipeline.syncOperations.addHandler(Answerer(answers))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        print("raw-nio: http://127.0.0.1:\(channel.localAddress?.port ?? 0)")
        fflush(nil)  // the bench reads the line through a pipe
        try await channel.closeFuture.get()
        exit(0)
    }

    final class Answerer: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let answers: [String: ByteBuffer]
        var pending = false

        init(_ answers: [String: ByteBuffer]) { self.answers = answers }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case let .head(request) = unwrapInboundIn(data) else { return }
            var headers = HTTPHeaders()
            if let body = answers[request.uri] {
                headers.add(name: "Content-Type", value: "image/png")
                headers.add(name: "Content-Length", value: String(body.readableBytes))
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            } else {
                headers.add(name: "Content-Length", value: "0")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .notFound, headers: headers))), promise: nil)
            }
            context.write(wrapOutboundOut(.end(nil)), promise: nil)
            pending = true
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            if pending {
                pending = false
                context.flush()
            }
            context.fireChannelReadComplete()
        }
    }
}
