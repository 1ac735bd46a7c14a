public import HTTPTypes
public import NIOCore
import NIOHTTP1
import Synchronization

extension FastLane {
    /// An answer's status and header fields, made once and shared by every answer that sends
    /// them: the lane keeps their HTTP/1.1 encoding for the current second of the `Date` field and
    /// sends those bytes again instead of encoding the head on every answer.
    ///
    /// A server that answers the same bytes many times (a memory hit) makes one `Head` per
    /// answer it can send and builds each ``Answer`` with ``Answer/init(head:body:)``; answers
    /// built from a status and fields get a head of their own, encoded for them alone.
    public final class Head: Sendable {
        /// The status.
        public let status: HTTPResponse.Status
        /// The header fields; `Content-Length` is added when missing, `Date` and `Server` always.
        public let headerFields: HTTPFields
        /// Whether an answer with this status may have a body (not 1xx, 204, 304).
        let mayHaveBody: Bool
        private let encoded = Mutex<Encoded?>(nil)

        /// The bytes sent for one `Date`, `Server` and body length.
        private struct Encoded {
            let date: String
            let serverName: String?
            let bodyLength: Int
            let bytes: ByteBuffer
        }

        /// Creates a head.
        public init(status: HTTPResponse.Status, headerFields: HTTPFields) {
            self.status = status
            self.headerFields = headerFields
            mayHaveBody = HTTPResponseStatus(statusCode: status.code).mayHaveResponseBody
        }

        /// The head as the lane sends it: made once per `date` (one value a second) and kept.
        func bytes(date: String, serverName: String?, bodyLength: Int) -> ByteBuffer {
            if let bytes = encoded.withLock({ encoded -> ByteBuffer? in
                // `date` is the same string all second long: comparing it costs next to nothing.
                guard let encoded, encoded.date == date, encoded.serverName == serverName, encoded.bodyLength == bodyLength else {
                    return nil
                }
                return encoded.bytes
            }) {
                return bytes
            }
            let bytes = WireHead.answer(status: status, fields: headerFields, bodyLength: bodyLength, date: date, serverName: serverName)
            encoded.withLock { $0 = Encoded(date: date, serverName: serverName, bodyLength: bodyLength, bytes: bytes) }
            return bytes
        }
    }
}

extension FastLane {
    /// One representation's two prepared heads: the 200 that sends its bytes and the 304 that
    /// tells a client its copy is still current (RFC 9110 15.4.5). Each is made once, for every
    /// answer of that representation, and the lane keeps its encoding (see ``Head``). Immutable:
    /// safe to share between threads.
    ///
    /// A server that answers a representation from memory keeps one `Heads` beside its body and
    /// answers with ``answer(body:notModified:)``.
    public struct Heads: Sendable {
        /// The 200's head: the representation's fields, its `Content-Length` among them.
        public let ok: Head
        /// The 304's head: the fields a 304 repeats (`ETag`, `Cache-Control`, `Vary`...); no body.
        public let notModified: Head

        /// Creates the two heads from the fields each answer sends, in their order.
        /// - Parameters:
        ///   - ok: the 200's fields.
        ///   - notModified: the 304's fields.
        public init(ok: HTTPFields, notModified: HTTPFields) {
            self.ok = Head(status: .ok, headerFields: ok)
            self.notModified = Head(status: .notModified, headerFields: notModified)
        }

        /// The 304, without a body, when `notModified`; else the 200 with `body`.
        public func answer(body: ByteBuffer, notModified isNotModified: Bool) -> Answer {
            isNotModified ? Answer(head: notModified) : Answer(head: ok, body: body)
        }
    }
}

/// Response heads in HTTP/1.1's wire form, byte for byte as NIO's `HTTPResponseEncoder` writes
/// them in Hummingbird's pipeline (framing headers set automatically, the body suppressed for
/// `HEAD` and `CONNECT`); the lane writes them past the encoder. A test holds the two equal.
enum WireHead {
    /// A lane answer's head: `fields` in their order with `Content-Length` (when missing), `Date`
    /// and `Server` as Hummingbird's application completes them, framed as NIO frames it.
    static func answer(status: HTTPResponse.Status, fields: HTTPFields, bodyLength: Int, date: String, serverName: String?) -> ByteBuffer {
        let mayHaveBody = HTTPResponseStatus(statusCode: status.code).mayHaveResponseBody
        var buffer = ByteBuffer()
        buffer.reserveCapacity(256)
        buffer.writeString("HTTP/1.1 \(status.code) \(reasonPhrase(status.code, status.reasonPhrase))\r\n")
        var hasLength = false
        var hasDate = false
        var hasServer = false
        for field in fields {
            switch field.name {
            case .contentLength:
                // NIO drops it from answers that cannot have a body; with it, any Transfer-Encoding.
                hasLength = true
                if !mayHaveBody { continue }
            case .transferEncoding:
                continue  // every lane answer has a length (added below when missing)
            case .date:
                // Replaced where it stands, as `HTTPFields` replaces a value (its first place).
                if !hasDate { line(&buffer, field.name.rawName, date) }
                hasDate = true
                continue
            case .server:
                guard let serverName else { break }
                if !hasServer { line(&buffer, field.name.rawName, serverName) }
                hasServer = true
                continue
            default:
                break
            }
            line(&buffer, field.name.rawName, field.value)
        }
        if !hasLength, mayHaveBody { line(&buffer, HTTPField.Name.contentLength.rawName, String(bodyLength)) }
        if !hasDate { line(&buffer, HTTPField.Name.date.rawName, date) }
        if !hasServer, let serverName { line(&buffer, HTTPField.Name.server.rawName, serverName) }
        buffer.writeStaticString("\r\n")
        return buffer
    }

    /// Hummingbird's head of a `HEAD` or `CONNECT` answer, framed as NIO's encoder paired with
    /// the request decoder frames it: a `HEAD` answer keeps (or gets) the framing fields an
    /// equivalent `GET` would have; a `CONNECT` answer has none.
    static func bodiless(_ head: HTTPResponseHead, connect: Bool) -> ByteBuffer {
        var headers = head.headers
        if connect || !head.status.mayHaveResponseBody {
            headers.remove(name: "content-length")
            headers.remove(name: "transfer-encoding")
        } else if headers.contains(name: "content-length") {
            headers.remove(name: "transfer-encoding")
        } else if head.version.major == 1, head.version.minor >= 1 {
            headers.replaceOrAdd(name: "transfer-encoding", value: "chunked")
        }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(256)
        let status = head.status
        buffer.writeString("HTTP/\(head.version.major).\(head.version.minor) \(status.code) \(status.reasonPhrase)\r\n")
        for (name, value) in headers { line(&buffer, name, value) }
        buffer.writeStaticString("\r\n")
        return buffer
    }

    /// NIO's reason phrase for `code`: its own for the codes it knows, `given` for the others.
    static func reasonPhrase(_ code: Int, _ given: String) -> String {
        let status = HTTPResponseStatus(statusCode: code, reasonPhrase: given)
        return status.reasonPhrase
    }

    private static func line(_ buffer: inout ByteBuffer, _ name: String, _ value: String) {
        buffer.writeString(name)
        buffer.writeStaticString(": ")
        buffer.writeString(value)
        buffer.writeStaticString("\r\n")
    }
}
