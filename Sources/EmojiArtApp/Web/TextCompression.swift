import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression

/// The app's text answers (pages, JSON, scripts, styles, metrics) compressed with gzip or deflate
/// when the request's `Accept-Encoding` allows it, by swift-nio-extras' `HTTPResponseCompressor`
/// in the connection's pipeline; images never (they are compressed already, and the fast lane's
/// answers do not pass through it), nor event streams (each event must leave as it happens).
///
/// A compressed answer is another representation: its `ETag` becomes weak (as nginx's gzip does),
/// which `If-None-Match`'s weak comparison still matches, and every compressible answer says
/// `Vary: Accept-Encoding`, compressed or not, so a cache in front keeps the two apart.
enum TextCompression {
    /// The content types worth compressing, without parameters.
    static let compressibleTypes: Set<String> = [
        "text/html", "text/css", "text/javascript", "application/javascript", "application/json", "text/plain",
        "image/svg+xml",
    ]

    /// The handlers to add to each connection's pipeline.
    @Sendable static func handlers() -> [any RemovableChannelHandler] {
        [AcceptEncodingForCompressor(), HTTPResponseCompressor(initialByteBufferCapacity: 0, responseCompressionPredicate: decide)]
    }

    /// Whether an answer with `head` is compressed; adds `Vary` and weakens the `ETag` as needed.
    static func decide(_ head: inout HTTPResponseHead, _ supported: Bool) -> HTTPResponseCompressor.CompressionIntent {
        guard isCompressible(head.headers.first(name: "content-type")) else { return .doNotCompress }
        if !head.headers[canonicalForm: "vary"].contains(where: { $0.lowercased() == "accept-encoding" }) {
            head.headers.add(name: "Vary", value: "Accept-Encoding")
        }
        guard supported else { return .doNotCompress }
        if let etag = head.headers.first(name: "etag"), !etag.hasPrefix("W/") {
            head.headers.replaceOrAdd(name: "ETag", value: "W/" + etag)
        }
        return .compressIfPossible
    }

    /// Whether `contentType` (with or without parameters) is one of ``compressibleTypes``.
    static func isCompressible(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return compressibleTypes.contains(type)
    }
}

/// What the compressor behind reads of a request's `Accept-Encoding`, settled first: it does not
/// know the method, and would frame a compressed (empty) body after a `HEAD` answer, which has
/// none, so a `HEAD` request loses the field; and where gzip is as acceptable as deflate it picks
/// deflate, whose name old clients read as raw deflate, so deflate is dropped when gzip is
/// accepted (gzip is what nginx and browsers expect).
final class AcceptEncodingForCompressor: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case var .head(head) = unwrapInboundIn(data), head.headers.contains(name: "accept-encoding") else {
            return context.fireChannelRead(data)
        }
        if head.method == .HEAD {
            head.headers.remove(name: "accept-encoding")
        } else {
            let codings = head.headers[canonicalForm: "accept-encoding"]
            guard codings.contains(where: Self.acceptsGzip) else { return context.fireChannelRead(data) }
            head.headers.replaceOrAdd(
                name: "Accept-Encoding", value: codings.filter { Self.coding($0) != "deflate" }.joined(separator: ", ")
            )
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// The content-coding of one `Accept-Encoding` element, lowercased, without its parameters.
    static func coding(_ element: Substring) -> String {
        element.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
    }

    /// Whether `element` accepts gzip: `gzip` (or `x-gzip`) with no `q`, or a `q` above 0.
    static func acceptsGzip(_ element: Substring) -> Bool {
        let parts = element.split(separator: ";")
        guard ["gzip", "x-gzip"].contains(coding(element)) else { return false }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            if pair.count == 2, pair[0] == "q" { return (Double(pair[1]) ?? 0) > 0 }
        }
        return true
    }
}
