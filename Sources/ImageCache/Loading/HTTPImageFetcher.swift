public import AsyncHTTPClient
import Foundation
public import HTTPCaching
package import NIOCore
import NIOHTTP1
import NIOPosix

/// Fetches images over HTTP with AsyncHTTPClient.
///
/// Only a 2xx answer is an image; a `304 Not Modified` to a conditional request says the stored
/// one is current. Every answer's caching fields (`Cache-Control`, `ETag`, `Last-Modified`,
/// `Date`, `Age`, `Expires`) come back in the image's ``Image/cacheHeaders``. The whole exchange has a deadline; the body is capped while it
/// streams in (a declared `Content-Length` over the cap is refused before reading, an undeclared
/// one is cut off at the cap). Cancelling the calling task cancels the request. `Sendable`.
///
/// An origin that cannot be connected to (refused, or no connection within the connect timeout)
/// fails with ``ImagePipeline/Error/originUnreachable(url:reason:)``; the pipeline remembers it
/// (``ImagePipeline/Configuration/unreachableOriginExpiry``), the fetcher remembers nothing.
///
/// The fetcher does not limit how many requests run at once: a pipeline's
/// ``ImagePipeline/Limits/downloads`` and ``ImagePipeline/Limits/downloadsPerHost`` (8 and 6, within
/// the client's 8 connections per host) are the one place downloads are limited, and its queues
/// wait as long as a burst takes. Used alone, keep a burst within the client's connections:
/// AsyncHTTPClient bounds a request's wait for a pooled connection by the connect timeout (10 s).
public struct HTTPImageFetcher: ImageFetching {
    /// The client; ``defaultClient`` unless one is given.
    public let client: HTTPClient
    /// Deadline for the whole request, body included.
    public var timeout: Duration
    /// Largest accepted body in bytes.
    public var maxBodySize: Int

    /// The process-wide client fetchers share by default, made with ``clientConfiguration``
    /// on AsyncHTTPClient's shared event loops.
    public static let defaultClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: clientConfiguration)

    /// How the clients of this package and of the EmojiArt app connect: AsyncHTTPClient's
    /// defaults (a 10-second connect timeout), except that a connection attempt that fails (the
    /// port is closed, the host unreachable) fails the requests waiting for it at once, instead
    /// of being retried until the connect timeout. A dead server reports at once, and the
    /// pipeline, not the client, decides when to ask it again
    /// (``ImagePipeline/Configuration/unreachableOriginExpiry``); a connection that is merely
    /// slow to open (a far server, a loaded machine) still has the whole connect timeout.
    public static var clientConfiguration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        return configuration
    }

    /// Creates a fetcher.
    public init(
        client: HTTPClient = defaultClient, timeout: Duration = .seconds(30), maxBodySize: Int = 50 * 1024 * 1024
    ) {
        self.client = client
        self.timeout = timeout
        self.maxBodySize = maxBodySize
    }

    /// Fetches `request.url`.
    /// - Throws: ``ImagePipeline/Error`` for HTTP, network and size failures; `CancellationError`.
    public func fetch(_ request: ImageRequest) async throws -> Image {
        try await fetch(request, revalidating: nil).fetchedImage(url: request.url)
    }

    /// Fetches `request.url`, conditionally on `stored`'s validators when given.
    public func fetch(_ request: ImageRequest, revalidating stored: CacheHeaders?) async throws -> OriginResponse {
        switch try await exchange(request, revalidating: stored) {
        case let .answered(response): return response
        case let .redirected(status, _): throw ImagePipeline.Error.httpStatus(status, url: request.url.absoluteString)
        }
    }

    /// How one request and its answer ended, for a fetcher that follows redirects itself.
    package enum Exchange: Sendable {
        /// The origin answered (2xx, 304, or a 404 or 410 with a lifetime).
        case answered(OriginResponse)
        /// A 3xx other than 304 with a `Location`, as it was sent (perhaps relative): the client
        /// did not follow it (its `redirectConfiguration` is `.disallow`), and its body was not read.
        case redirected(status: Int, location: String)
    }

    /// ``fetch(_:revalidating:)`` that hands back a redirect instead of failing on it: the one
    /// exchange, with the same deadline, body limit and error mapping, for a fetcher that checks
    /// each redirect's target before it follows it (the image service's).
    package func exchange(_ request: ImageRequest, revalidating stored: CacheHeaders?) async throws -> Exchange {
        let url = request.url.absoluteString
        guard let scheme = request.url.scheme, scheme == "http" || scheme == "https" else {
            throw ImagePipeline.Error.invalidURL(url)
        }
        var httpRequest = HTTPClientRequest(url: url)
        for (name, value) in request.headers { httpRequest.headers.add(name: name, value: value) }
        if let stored {
            for (name, value) in stored.conditionalFields { httpRequest.headers.replaceOrAdd(name: name, value: value) }
        }
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        // Compared as a Double before it becomes nanoseconds: Int64(x) traps past 292 years.
        let deadline: NIODeadline = if (0..<86_400 * 365).contains(seconds) {
            .now() + .nanoseconds(Int64(seconds * 1e9))
        } else {
            seconds > 0 ? .distantFuture : .now()
        }
        // The same moment for the body: AsyncHTTPClient's deadline ends with the response's head.
        let bodyDeadline: ContinuousClock.Instant? = if (0..<86_400 * 365).contains(seconds) {
            .now + timeout
        } else {
            seconds > 0 ? nil : .now
        }
        do {
            let requestTime = Date()
            let response: HTTPClientResponse
            do {
                response = try await client.execute(httpRequest, deadline: deadline)
            } catch {
                // No connection at all (refused, or none in time) is told apart: the pipeline
                // then leaves the origin alone for a moment.
                if Self.isConnectFailure(error) {
                    throw ImagePipeline.Error.originUnreachable(url: url, reason: Self.describe(error))
                }
                throw Self.map(error, url: url, seconds: seconds, limit: maxBodySize)
            }
            let fields = response.headers.map { ($0.name, $0.value) }
            if response.status == .notModified, let stored {
                return .answered(.notModified(stored.updated(withNotModified: fields, requestTime: requestTime, responseTime: Date())))
            }
            if (300..<400).contains(response.status.code), response.status != .notModified,
               let location = response.headers.first(name: "location") {
                return .redirected(status: Int(response.status.code), location: location)
            }
            if response.status.code == 404 || response.status.code == 410 {
                // A lifetime makes the answer worth remembering: the cache stores it.
                let headers = CacheHeaders(fields: fields, requestTime: requestTime, responseTime: Date())
                if headers.cacheControl.maxAge != nil || headers.expires != nil, !headers.cacheControl.noStore {
                    return .answered(.missing(status: Int(response.status.code), headers))
                }
            }
            guard (200..<300).contains(response.status.code) else {
                throw ImagePipeline.Error.httpStatus(Int(response.status.code), url: url)
            }
            if let declared = response.headers.first(name: "content-length").flatMap(Int.init), declared > maxBodySize {
                throw ImagePipeline.Error.bodyTooLarge(limit: maxBodySize, url: url)
            }
            var body = try await response.body.collect(upTo: maxBodySize, by: bodyDeadline)
            // A body of one chunk can be a slice of a larger read buffer, which the image would
            // keep alive whole while memory counts only its bytes: then one tight copy.
            if body.storageCapacity > body.readableBytes + body.readableBytes / 4 + 4096 {
                var tight = ByteBufferAllocator().buffer(capacity: body.readableBytes)
                tight.writeImmutableBuffer(body)
                body = tight
            }
            let contentType = response.headers.first(name: "content-type") ?? "application/octet-stream"
            let headers = CacheHeaders(fields: fields, requestTime: requestTime, responseTime: Date())
            return .answered(.fetched(Image(buffer: body, contentType: contentType, cacheHeaders: headers)))
        } catch let error as ImagePipeline.Error {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Self.map(error, url: url, seconds: seconds, limit: maxBodySize)
        }
    }

    /// Whether `error` says no connection could be made (as opposed to one that broke or a
    /// server that is slow to answer).
    static func isConnectFailure(_ error: any Swift.Error) -> Bool {
        if let clientError = error as? HTTPClientError {
            return clientError == .connectTimeout
        }
        if case ChannelError.connectTimeout = error { return true }
        return error is NIOConnectionError || (error as? IOError).map { $0.errnoCode == ECONNREFUSED } == true
    }

    /// Turns AsyncHTTPClient's and NIO's errors into the module's.
    static func map(_ error: any Swift.Error, url: String, seconds: Double, limit: Int) -> any Swift.Error {
        if error is NIOTooManyBytesError {
            return ImagePipeline.Error.bodyTooLarge(limit: limit, url: url)
        }
        if let clientError = error as? HTTPClientError {
            switch clientError {
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                return ImagePipeline.Error.timeout(url: url, seconds: seconds)
            case .cancelled:
                return CancellationError()
            default:
                break
            }
        }
        return ImagePipeline.Error.connectionFailed(url: url, reason: describe(error))
    }

    /// Why a request to a server got no answer, in a person's words: NIO's own text for a
    /// refused connection reads "connection reset (error set): Connection refused) (errno: 111)".
    /// For AsyncHTTPClient's and NIO's errors; any other error's own description.
    public static func describe(_ error: any Swift.Error) -> String {
        if let clientError = error as? HTTPClientError {
            switch clientError {
            case .connectTimeout: return "no connection could be made within the connect timeout"
            case .deadlineExceeded, .readTimeout, .writeTimeout: return "no answer in time"
            case .remoteConnectionClosed: return "the connection closed before the answer was complete"
            default: return "\(clientError)"
            }
        }
        if case ChannelError.connectTimeout = error { return "no connection could be made within the connect timeout" }
        if let error = error as? IOError { return describe(errno: error.errnoCode) }
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return describe(first.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "the host name \(error.host) could not be resolved" }
            return "no connection could be made to \(error.host) port \(error.port)"
        }
        return String(describing: error)
    }

    /// A socket error's meaning, with the common ones said plainly.
    static func describe(errno code: CInt) -> String {
        switch code {
        case ECONNREFUSED: "connection refused: nothing listens at that address and port"
        case ECONNRESET: "the connection was reset by the other end"
        case ETIMEDOUT: "the connection timed out"
        case EHOSTUNREACH, ENETUNREACH: "no route to the host"
        default: "\(String(cString: strerror(code))) (errno \(code))"
        }
    }
}

extension HTTPClientResponse.Body {
    /// The whole body, at most `limit` bytes, by `deadline` (none when `nil`): the deadline
    /// AsyncHTTPClient takes for a request covers only the wait for the response's head, so a
    /// body that stalls, or trickles a byte a second, would otherwise hold its request for ever.
    /// - Throws: `HTTPClientError.deadlineExceeded` when the deadline passes first (the transfer
    ///   is cancelled and its connection closed); `NIOTooManyBytesError` past `limit`.
    package func collect(upTo limit: Int, by deadline: ContinuousClock.Instant?) async throws -> ByteBuffer {
        try await collect(upTo: limit, by: deadline, on: ContinuousClock())
    }

    /// ``collect(upTo:by:)`` with the deadline on `clock`: tests pass a clock they move.
    package func collect<C: Clock>(upTo limit: Int, by deadline: C.Instant?, on clock: C) async throws -> ByteBuffer {
        guard let deadline else { return try await collect(upTo: limit) }
        return try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await self.collect(upTo: limit) }
            group.addTask {
                try await clock.sleep(until: deadline, tolerance: nil)
                return nil
            }
            defer { group.cancelAll() }
            guard let body = try await group.next() ?? nil else { throw HTTPClientError.deadlineExceeded }
            return body
        }
    }
}
