import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The Swift limit for the fast lane's bench: a minimal SwiftNIO HTTP/1.1 server, NIO's own
/// pipeline and one handler answering `GET` from a dictionary of paths to answers, as small as a
/// server can be. Run as a child process (`emojiart-bench --serve-raw-nio DIR`) so it can be
/// pinned to a CPU of its own.
enum RawNIOServer {
    /// One path's answers: the bytes with two fields, and, when the bench recorded the route's
    /// own answer, the same bytes with the route's fields.
    struct Answer {
        let body: ByteBuffer
        /// The route's fields in its order, `Date` at `dateIndex` (its value replaced per
        /// request); `nil` when none were recorded.
        let fields: [(String, String)]?
        let dateIndex: Int
    }

    /// Serves every file under `directory` at `/` + its relative path (a file named
    /// `gallery/image?5` answers `/gallery/image?5`) with `Content-Type` and `Content-Length`
    /// only; a file with a `.fields` file beside it (the header lines of the route's answer, as
    /// `curl -D` writes them) also answers at `/full` + its path with those fields in their order,
    /// `Date` formatted once per second, as the route sends. Prints `raw-nio: http://127.0.0.1:PORT`,
    /// then serves until killed.
    static func serve(_ directory: String) async throws -> Never {
        // The bench stops it with SIGINT, which a shell starting the bench in the background
        // leaves ignored, and an ignored signal stays ignored in children: take the default back.
        signal(SIGINT, SIG_DFL)
        var answers: [String: Answer] = [:]
        let root = URL(fileURLWithPath: directory)
        for case let path as String in FileManager.default.enumerator(atPath: directory) ?? .init() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue,
                  !path.hasSuffix(".fields")
            else { continue }
            let body = ByteBuffer(bytes: try Data(contentsOf: root.appendingPathComponent(path)))
            answers["/" + path] = Answer(body: body, fields: nil, dateIndex: 0)
            if let text = try? String(contentsOfFile: directory + "/" + path + ".fields", encoding: .utf8) {
                var fields: [(String, String)] = []
                for line in text.split(whereSeparator: \.isNewline).dropFirst() {  // the status line first
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
                }
                guard let dateIndex = fields.firstIndex(where: { $0.0.lowercased() == "date" }) else { continue }
                answers["/full/" + path] = Answer(body: body, fields: fields, dateIndex: dateIndex)
            }
        }
        let table = answers
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false)
                    try channel.pipeline.syncOperations.addHandler(Answerer(table))
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
        let answers: [String: Answer]
        var pending = false
        /// The `Date` field of the current second.
        var date: (second: Int, text: String) = (.min, "")

        init(_ answers: [String: Answer]) { self.answers = answers }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case let .head(request) = unwrapInboundIn(data) else { return }
            if let answer = answers[request.uri] {
                var headers: HTTPHeaders
                if var fields = answer.fields {
                    fields[answer.dateIndex].1 = currentDate()
                    headers = HTTPHeaders(fields)
                } else {
                    headers = HTTPHeaders()
                    headers.add(name: "Content-Type", value: "image/png")
                    headers.add(name: "Content-Length", value: String(answer.body.readableBytes))
                }
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(answer.body))), promise: nil)
            } else {
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: "0")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .notFound, headers: headers))), promise: nil)
            }
            context.write(wrapOutboundOut(.end(nil)), promise: nil)
            pending = true
        }

        func currentDate() -> String {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let second = now.tv_sec
            if second != date.second {
                date = (second, Self.httpDate(second))
            }
            return date.text
        }

        /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) for a Unix second.
        static func httpDate(_ second: Int) -> String {
            var time = time_t(second)
            var parts = tm()
            gmtime_r(&time, &parts)
            var buffer = [CChar](repeating: 0, count: 40)
            let count = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
            return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
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
