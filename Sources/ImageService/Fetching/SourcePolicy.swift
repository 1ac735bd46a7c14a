public import Foundation

/// Which source URLs the service fetches, which addresses it connects to, and how much it
/// takes: the settings imgproxy reads from `IMGPROXY_ALLOWED_SOURCES`,
/// `IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES`, `IMGPROXY_ALLOW_LINK_LOCAL_SOURCE_ADDRESSES`,
/// `IMGPROXY_ALLOW_PRIVATE_SOURCE_ADDRESSES`, `IMGPROXY_MAX_SRC_FILE_SIZE`,
/// `IMGPROXY_DOWNLOAD_TIMEOUT` and `IMGPROXY_MAX_REDIRECTS`. A value type; `Sendable`.
///
/// Unlike imgproxy, which allows private addresses by default, every address class but
/// ``SourceAddress/Kind/public`` is refused unless allowed here; multicast and broadcast
/// addresses are never allowed.
public struct SourcePolicy: Sendable, Hashable {
    /// Prefixes a source URL must begin with, as imgproxy matches them: the URL as written is
    /// compared from its start, and each `*` in a prefix matches any run of characters other
    /// than `/` (so `https://*.example.com/` takes `https://img.example.com/a.png` but not
    /// `https://evil.com/.example.com/`). End a prefix with `/` after the host: without it
    /// `https://example.com` also takes `https://example.com.evil.net/`.
    ///
    /// Empty means every http(s) source, as imgproxy has it; the address rules still apply. A
    /// server should not run that way: the image service's server requires an explicit list.
    public var allowedSources: [String]
    /// Whether loopback (127.0.0.0/8, `::1`) and unspecified (0.0.0.0/8, `::`) addresses may be
    /// connected to. Off by default.
    public var allowsLoopback: Bool
    /// Whether link-local addresses (169.254.0.0/16, fe80::/10) may be connected to. Off by default.
    public var allowsLinkLocal: Bool
    /// Whether private addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) may be
    /// connected to. Off by default.
    public var allowsPrivate: Bool
    /// The largest source accepted, in bytes: a declared `Content-Length` over it is refused
    /// before the body is read, an undeclared one is cut off there.
    public var maxSourceBytes: Int
    /// How long one fetch may take, redirects and bodies included.
    public var timeout: Duration
    /// How many redirects a fetch follows (each one checked as the source was); one more fails.
    public var maxRedirects: Int

    /// Creates a policy; only the allowed sources have no default.
    public init(
        allowedSources: [String],
        allowsLoopback: Bool = false,
        allowsLinkLocal: Bool = false,
        allowsPrivate: Bool = false,
        maxSourceBytes: Int = 20 * 1024 * 1024,
        timeout: Duration = .seconds(10),
        maxRedirects: Int = 3
    ) {
        self.allowedSources = allowedSources
        self.allowsLoopback = allowsLoopback
        self.allowsLinkLocal = allowsLinkLocal
        self.allowsPrivate = allowsPrivate
        self.maxSourceBytes = maxSourceBytes
        self.timeout = timeout
        self.maxRedirects = maxRedirects
    }

    /// Checks that `url` is a source to fetch: `http` or `https`, with a host, without user
    /// information (which only serves to disguise the host, as in
    /// `http://allowed.example@127.0.0.1/`), and beginning with an allowed prefix. Says nothing
    /// of the addresses its host resolves to: ``SourceFetcher`` checks those when it connects.
    /// - Throws: ``ImageService/Error/invalidSourceURL(_:)`` for the form,
    ///   ``ImageService/Error/sourceNotAllowed(_:)`` for the prefix.
    public func check(_ url: URL) throws(ImageService.Error) {
        let text = url.absoluteString
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .invalidSourceURL("\(text) is not an http or https URL")
        }
        guard let host = url.host, !host.isEmpty else { throw .invalidSourceURL("\(text) has no host") }
        // A host name or an address literal, as written and as decoded, nothing else: a
        // percent-escape in the host decodes to what the prefix never saw (`127.0.0.1%00.allowed.test`
        // is `127.0.0.1` to the resolver; `x.allowed.test%2eevil.example` matches the prefix
        // `http://*.allowed.test` and is a host of evil.example).
        let written = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedHost ?? host
        guard host.utf8.allSatisfy(Self.isHostByte), written.utf8.allSatisfy(Self.isHostByte) else {
            throw .invalidSourceURL("the host of \(text) has characters no host name has; give it in ASCII (punycode for an international name), without escapes")
        }
        guard url.user == nil, url.password == nil else {
            throw .invalidSourceURL("\(text) has user information before its host; give the source without it")
        }
        guard allowedSources.isEmpty || allowedSources.contains(where: { Self.matches(text, prefix: $0) }) else {
            throw .sourceNotAllowed(text)
        }
    }

    /// Letters, digits, `-`, `.`, and `:`, `[`, `]` of an IPv6 literal.
    static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"):
            true
        default: false
        }
    }

    /// Whether an address of `kind` may be connected to.
    public func allows(_ kind: SourceAddress.Kind) -> Bool {
        switch kind {
        case .public: true
        case .loopback, .unspecified: allowsLoopback
        case .linkLocal: allowsLinkLocal
        case .private: allowsPrivate
        case .multicast, .broadcast: false
        }
    }

    /// Whether `url` begins with `prefix`, where each `*` of `prefix` stands for any run of
    /// characters other than `/`. Follows every position a run can end at (a set, not
    /// backtracking), so a prefix of many stars costs at most its parts times the URL's length
    /// squared.
    static func matches(_ url: String, prefix: String) -> Bool {
        let text = Array(url.utf8)
        let parts = prefix.utf8.split(separator: UInt8(ascii: "*"), omittingEmptySubsequences: false)
        var positions: Set<Int> = [0]
        for (index, part) in parts.enumerated() {
            if index > 0 {
                // A star: from each position, any run of non-slash characters.
                var reached = positions
                for start in positions {
                    var end = start
                    while end < text.count, text[end] != UInt8(ascii: "/") {
                        end += 1
                        reached.insert(end)
                    }
                }
                positions = reached
            }
            positions = Set(positions.compactMap { start in
                let end = start + part.count
                return end <= text.count && text[start..<end].elementsEqual(part) ? end : nil
            })
            if positions.isEmpty { return false }
        }
        return true
    }
}
