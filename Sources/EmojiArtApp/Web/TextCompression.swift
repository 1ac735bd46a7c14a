import Foundation
import HTTPCaching
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

    /// The handlers to add to each connection's pipeline: the compressor between the two halves
    /// of its guard.
    @Sendable static func handlers() -> [any RemovableChannelHandler] {
        let parseErrors = ParseErrorRequests()
        return [
            AcceptEncodingForCompressor(parseErrors: parseErrors),
            HTTPResponseCompressor(initialByteBufferCapacity: 0, responseCompressionPredicate: decide),
            ParseErrorRequestDropper(parseErrors: parseErrors),
        ]
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
///
/// It also keeps the compressor from trapping on a request that could not be parsed. The
/// compressor pairs each answer with a request head it saw (their `Accept-Encoding`, first in
/// first out) and traps on an answer without one; Hummingbird answers a parse error with a 400 of
/// its own, for which no head ever passed. So at a parse error this sends the compressor a head
/// (a plain `GET /`, asking for no coding) for that 400, and ``ParseErrorRequestDropper``, on the
/// compressor's other side, drops it before anything else can see it.
final class AcceptEncodingForCompressor: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let parseErrors: ParseErrorRequests

    init(parseErrors: ParseErrorRequests) {
        self.parseErrors = parseErrors
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError {
            parseErrors.sent += 1
            context.fireChannelRead(wrapInboundOut(.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/"))))
        }
        context.fireErrorCaught(error)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case var .head(head) = unwrapInboundIn(data), head.headers.contains(name: "accept-encoding") else {
            return context.fireChannelRead(data)
        }
        if head.method == .HEAD {
            head.headers.remove(name: "accept-encoding")
        } else if let coding = Self.coding(accepting: head.headers["accept-encoding"].joined(separator: ", ")) {
            // What the compressor is left to read, settled here in the form it reads (it matches
            // names case-sensitively, reads `q` only without spaces, and takes `*` for gzip even
            // after `gzip;q=0`).
            head.headers.replaceOrAdd(name: "Accept-Encoding", value: coding)
        } else {
            head.headers.remove(name: "accept-encoding")
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// The coding the compressor is left to make for an `Accept-Encoding` of `field` (all its
    /// lines joined with commas), read as ``WeightedPreferences``: `gzip` when the field accepts
    /// gzip (RFC 9110 12.5.3: `gzip` or `x-gzip` with a weight above 0 where either is named,
    /// else `*` with one), else `deflate` when it names deflate with a weight above 0, else `nil`.
    /// A name listed more than once counts with its highest weight.
    static func coding(accepting field: String) -> String? {
        var gzip = -1, any = -1, deflate = -1
        for preference in WeightedPreferences(field) {
            if preference.names("gzip") || preference.names("x-gzip") { gzip = max(gzip, preference.weight) }
            else if preference.names("*") { any = max(any, preference.weight) }
            else if preference.names("deflate") { deflate = max(deflate, preference.weight) }
        }
        if (gzip >= 0 ? gzip : any) > 0 { return "gzip" }
        return deflate > 0 ? "deflate" : nil
    }
}

/// The request heads ``AcceptEncodingForCompressor`` sent the compressor for parse errors and
/// ``ParseErrorRequestDropper`` has not dropped yet: one connection's, on its event loop alone.
final class ParseErrorRequests {
    var sent = 0
}

/// Drops the heads ``AcceptEncodingForCompressor`` made up for parse errors once the compressor
/// has seen them, so Hummingbird never reads a request nobody sent.
final class ParseErrorRequestDropper: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let parseErrors: ParseErrorRequests

    init(parseErrors: ParseErrorRequests) {
        self.parseErrors = parseErrors
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The made-up head comes straight through the compressor, before any other part.
        if parseErrors.sent > 0, case .head = unwrapInboundIn(data) {
            parseErrors.sent -= 1
            return
        }
        context.fireChannelRead(data)
    }
}
