import AsyncHTTPClient
public import Foundation
public import HTTPCaching
public import ImageCache
import NIOCore
import NIOPosix

/// Fetches the image service's sources as its ``SourcePolicy`` allows, through an
/// `ImageCache/ImagePipeline` (its priorities, per-host limits, coalescing and revalidation):
/// the service's defence against being used to reach what only it can reach (SSRF).
///
/// Each hop of a fetch, the source and every redirect it follows, is checked the same way:
/// 1. the URL by ``SourcePolicy/check(_:)`` (scheme, no user information, an allowed prefix);
/// 2. its host resolved here, and every address it resolves to judged by its
///    ``SourceAddress/kind``: one that is not allowed refuses the hop, so spellings such as
///    `localhost`, `127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1` or `[::ffff:127.0.0.1]`
///    are judged by the address they mean;
/// 3. the connection pinned to the address judged, so that no second lookup (DNS rebinding: a
///    name that answers a public address to the check and a loopback one to the connection)
///    can send it elsewhere.
///
/// The pin is AsyncHTTPClient's `Configuration.dnsOverride`: each hop runs on a client of its
/// own whose override maps the URL's host to the checked address, so the client connects to
/// that address and no other, with no lookup of its own, while the `Host` header, TLS's server
/// name and the certificate check still use the host name. (An IP literal is connected to as
/// written, which is the address judged.) The override is a client's setting, not a request's,
/// hence the client per hop, made on AsyncHTTPClient's shared event loops and shut down after
/// its hop: a source's connection is not kept alive for the next one, the price of never
/// letting a pooled connection carry a request for a host it was not checked for. The client
/// follows no redirect itself; this fetcher follows at most ``SourcePolicy/maxRedirects``.
///
/// ``canFetch(_:)`` is ``SourcePolicy/check(_:)``: the pipeline refuses any other URL with
/// `ImageCache/ImagePipeline/Error/invalidURL(_:)` before fetching; a server that wants the
/// reason calls ``SourcePolicy/check(_:)`` itself first.
///
/// The exchange itself (deadline, body limit, `If-None-Match`/`If-Modified-Since`, error
/// mapping) is `ImageCache/HTTPImageFetcher`'s. Refusals throw ``ImageService/Error``; the
/// pipeline passes them through unchanged (and does not remember them). HTTP and network
/// failures throw `ImageCache/ImagePipeline/Error` as the default fetcher does. `Sendable`.
public struct SourceFetcher: ImageFetching {
    /// What is fetched and connected to.
    public let policy: SourcePolicy
    /// Resolves a host name to its addresses: the system's resolver, or a test's.
    let resolve: @Sendable (String) async throws -> [SourceAddress]

    /// Creates a fetcher that resolves hosts with the system's resolver (`getaddrinfo`, on
    /// NIO's blocking-I/O threads).
    public init(policy: SourcePolicy) {
        self.init(policy: policy, resolve: Self.systemResolve)
    }

    /// Creates a fetcher with its own resolver: tests give names addresses the system's
    /// resolver does not know.
    package init(policy: SourcePolicy, resolve: @escaping @Sendable (String) async throws -> [SourceAddress]) {
        self.policy = policy
        self.resolve = resolve
    }

    /// Whether `url` passes ``SourcePolicy/check(_:)``; the pipeline refuses any other URL when
    /// it is requested.
    public func canFetch(_ url: URL) -> Bool {
        (try? policy.check(url)) != nil
    }

    /// Fetches `request.url` and the redirects it leads to.
    /// - Throws: ``ImageService/Error`` for a source, redirect or address the policy refuses;
    ///   `ImageCache/ImagePipeline/Error` for HTTP, network, time and size failures.
    public func fetch(_ request: ImageRequest) async throws -> Image {
        try await fetch(request, revalidating: nil).fetchedImage(url: request.url)
    }

    /// Fetches `request.url` and the redirects it leads to, conditionally on `stored`'s
    /// validators when given (a `304` answers `ImageCache/OriginResponse/notModified(_:)`).
    /// - Throws: as ``fetch(_:)``.
    public func fetch(_ request: ImageRequest, revalidating stored: CacheHeaders?) async throws -> OriginResponse {
        let deadline = ContinuousClock.now + policy.timeout
        var url = request.url
        var redirects = 0
        try policy.check(url)
        while true {
            let pin = try await pinnedAddress(for: url, by: deadline)
            let remaining = deadline - .now
            guard remaining > .zero else {
                throw ImagePipeline.Error.timeout(url: url.absoluteString, seconds: Self.seconds(policy.timeout))
            }
            let hop = ImageRequest(url: url, headers: request.headers)
            let exchange = try await withPinnedClient(pin) { client in
                try await HTTPImageFetcher(client: client, timeout: remaining, maxBodySize: policy.maxSourceBytes)
                    .exchange(hop, revalidating: stored)
            }
            switch exchange {
            case let .answered(response):
                return response
            case let .redirected(_, location):
                guard let next = URL(string: location, relativeTo: url)?.absoluteURL else {
                    throw ImageService.Error.redirectNotAllowed(from: url.absoluteString, to: location)
                }
                redirects += 1
                guard redirects <= policy.maxRedirects else {
                    throw ImageService.Error.tooManyRedirects(source: request.url.absoluteString, limit: policy.maxRedirects)
                }
                guard canFetch(next) else {
                    throw ImageService.Error.redirectNotAllowed(from: url.absoluteString, to: next.absoluteString)
                }
                url = next  // its address is judged as the source's was, at the top
            }
        }
    }

    /// Where a hop connects: the host as AsyncHTTPClient keys its override, and the address.
    struct Pin {
        /// The URL's host as AsyncHTTPClient reads it: `url.host` without brackets.
        let host: String
        /// The checked address to connect to; `nil` for an IP literal, connected to as written.
        let address: SourceAddress?
    }

    /// Resolves `url`'s host and judges every address it resolves to; returns the one to
    /// connect to (the first IPv4 one, else the first). A name with any address the policy
    /// refuses is refused whole: which of its addresses a client would have used is chance,
    /// and a name that points partly inside is no source to trust.
    /// - Throws: ``ImageService/Error/addressNotAllowed(host:address:kind:)`` for the first
    ///   address the policy refuses; `ImageCache/ImagePipeline/Error/originUnreachable(url:reason:)`
    ///   when the name does not resolve; `ImageCache/ImagePipeline/Error/timeout(url:seconds:)`
    ///   when it does not resolve by `deadline` (the lookup is left to finish on its thread).
    func pinnedAddress(for url: URL, by deadline: ContinuousClock.Instant) async throws -> Pin {
        // As AsyncHTTPClient reads it on Linux (DeconstructedURL): the host, brackets trimmed.
        let written = url.host ?? ""
        let host = written.hasPrefix("[") && written.hasSuffix("]") ? String(written.dropFirst().dropLast()) : written
        // A literal that `inet_pton` reads is the address AsyncHTTPClient connects to as is.
        if let literal = SourceAddress(host) {
            guard policy.allows(literal.kind) else {
                throw ImageService.Error.addressNotAllowed(host: host, address: literal.description, kind: literal.kind)
            }
            return Pin(host: host, address: nil)
        }
        let addresses = try await withThrowingTaskGroup(of: [SourceAddress]?.self) { [resolve] group in
            group.addTask {
                do {
                    return try await resolve(host)
                } catch {
                    throw ImagePipeline.Error.originUnreachable(
                        url: url.absoluteString, reason: "the host name \(host) could not be resolved (\(error))")
                }
            }
            group.addTask {
                try await ContinuousClock().sleep(until: deadline, tolerance: nil)
                return nil
            }
            defer { group.cancelAll() }
            guard let addresses = try await group.next() ?? nil else {
                throw ImagePipeline.Error.timeout(url: url.absoluteString, seconds: Self.seconds(policy.timeout))
            }
            return addresses
        }
        guard let first = addresses.first else {
            throw ImagePipeline.Error.originUnreachable(url: url.absoluteString, reason: "the host name \(host) has no address")
        }
        if let refused = addresses.first(where: { !policy.allows($0.kind) }) {
            throw ImageService.Error.addressNotAllowed(host: host, address: refused.description, kind: refused.kind)
        }
        return Pin(host: host, address: addresses.first(where: \.isIPv4) ?? first)
    }

    /// Runs `body` with a client that connects `pin.host` to `pin.address` only and follows no
    /// redirect, and shuts the client down after it.
    func withPinnedClient<T: Sendable>(_ pin: Pin, _ body: (HTTPClient) async throws -> T) async throws -> T {
        var configuration = HTTPImageFetcher.clientConfiguration
        configuration.redirectConfiguration = .disallow
        if let address = pin.address { configuration.dnsOverride = [pin.host: address.description] }
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let result: Result<T, any Swift.Error>
        do { result = .success(try await body(client)) } catch { result = .failure(error) }
        try? await client.shutdown()
        return try result.get()
    }

    /// A duration in seconds, as `ImageCache/ImagePipeline/Error/timeout(url:seconds:)` says it.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
