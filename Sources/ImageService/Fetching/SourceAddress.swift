#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IP address a source's host resolved to, and the kind of network it belongs to: what
/// ``SourcePolicy`` judges before the service connects. A value type; `Sendable`.
///
/// An IPv6 address that carries an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
/// `::a.b.c.d`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo `2001::/32`,
/// ISATAP) is of the IPv4 address's kind when that is not public: wrapping `127.0.0.1` does not
/// make it public.
public struct SourceAddress: Sendable, Hashable, CustomStringConvertible {
    /// The kind of network an address belongs to.
    public enum Kind: String, Sendable, Hashable, CustomStringConvertible {
        /// Anywhere else: the only kind a default ``SourcePolicy`` connects to.
        case `public`
        /// This machine: 127.0.0.0/8, `::1`.
        case loopback
        /// "This host" (0.0.0.0/8, `::`): Linux connects it to the machine itself, so it goes
        /// with loopback.
        case unspecified
        /// 169.254.0.0/16 (where cloud metadata services answer), fe80::/10.
        case linkLocal
        /// 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade NAT), fc00::/7.
        case `private`
        /// 224.0.0.0/4, ff00::/8: never a source.
        case multicast
        /// 255.255.255.255 and 240.0.0.0/4 (reserved): never a source.
        case broadcast

        /// The kind's name, as an error message says it.
        public var description: String {
            switch self {
            case .public: "public"
            case .loopback: "loopback"
            case .unspecified: "unspecified (this host)"
            case .linkLocal: "link-local"
            case .private: "private"
            case .multicast: "multicast"
            case .broadcast: "broadcast or reserved"
            }
        }
    }

    /// The address's bytes in network order: 4 for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// An address from its bytes in network order; `nil` unless there are 4 or 16.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// An address from its strict textual form (`inet_pton`: dotted-quad IPv4, IPv6 without
    /// brackets or zone); `nil` for anything else, including `127.1` and `0x7f000001`, which
    /// only a resolver turns into addresses.
    public init?(_ text: String) {
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = v4
            return
        }
        var v6 = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        bytes = v6
    }

    /// Whether this is an IPv4 address.
    public var isIPv4: Bool { bytes.count == 4 }

    /// The address in its usual textual form (`inet_ntop`), without brackets.
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = inet_ntop(isIPv4 ? AF_INET : AF_INET6, bytes, &text, socklen_t(text.count))
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The kind of network the address belongs to, looking through IPv6 forms that carry an
    /// IPv4 address.
    public var kind: Kind {
        if isIPv4 { return Self.kind(ofIPv4: bytes) }
        let own = Self.kind(ofIPv6: bytes)
        if own != .public { return own }
        return embeddedIPv4.map(Self.kind(ofIPv4:)) ?? .public
    }

    /// The IPv4 address an IPv6 address carries, by the embedding forms of imgproxy's
    /// `privatenet` (RFC 4291, 6052, 8215, 3056, 4380, 5214).
    var embeddedIPv4: [UInt8]? {
        guard bytes.count == 16 else { return nil }
        let b = bytes
        let last4 = Array(b[12..<16])
        if b[0..<10].allSatisfy({ $0 == 0 }) && (b[10..<12] == [0xFF, 0xFF] || b[10..<12] == [0, 0]) {
            return last4  // mapped ::ffff:a.b.c.d, compatible ::a.b.c.d
        }
        if b[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return last4 }  // NAT64 well-known
        if b[0..<6] == [0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01] { return [b[6], b[7], b[9], b[10]] }  // NAT64 local-use
        if b[0] == 0x20 && b[1] == 0x02 { return Array(b[2..<6]) }  // 6to4
        if b[0..<4] == [0x20, 0x01, 0, 0] { return last4.map { $0 ^ 0xFF } }  // Teredo
        if (b[8] == 0 || b[8] == 0x02) && b[9] == 0 && b[10] == 0x5E && b[11] == 0xFE { return last4 }  // ISATAP
        return nil
    }

    static func kind(ofIPv4 b: [UInt8]) -> Kind {
        switch (b[0], b[1]) {
        case (0, _): .unspecified
        case (127, _): .loopback
        case (10, _), (172, 16...31), (192, 168), (100, 64...127): .private
        case (169, 254): .linkLocal
        case (224...239, _): .multicast
        case (240...255, _): .broadcast
        default: .public
        }
    }

    static func kind(ofIPv6 b: [UInt8]) -> Kind {
        if b[0..<15].allSatisfy({ $0 == 0 }) {
            if b[15] == 0 { return .unspecified }
            if b[15] == 1 { return .loopback }
        }
        if b[0] == 0xFF { return .multicast }
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return .linkLocal }
        if b[0] & 0xFE == 0xFC { return .private }
        return .public
    }
}
