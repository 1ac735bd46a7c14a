#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOPosix

extension SourceFetcher {
    /// A host name's addresses by `getaddrinfo`, which reads every spelling the C library does
    /// (`127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`, `/etc/hosts`' `localhost`), as the
    /// client's own resolver would. `getaddrinfo` blocks, so it runs on NIO's blocking-I/O
    /// threads, not on a task's.
    /// - Throws: ``ResolveError`` when the name does not resolve.
    @Sendable static func systemResolve(_ host: String) async throws -> [SourceAddress] {
        try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            #else
            hints.ai_socktype = SOCK_STREAM
            #endif
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, nil, &hints, &list)
            guard status == 0 else { throw ResolveError(message: String(cString: gai_strerror(status))) }
            defer { freeaddrinfo(list) }
            var addresses: [SourceAddress] = []
            var next = list
            while let info = next?.pointee {
                next = info.ai_next
                guard let address = info.ai_addr else { continue }
                switch info.ai_family {
                case AF_INET:
                    let raw = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                    let bytes = withUnsafeBytes(of: raw) { Array($0) }
                    if let found = SourceAddress(bytes: bytes), !addresses.contains(found) { addresses.append(found) }
                case AF_INET6:
                    let raw = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                    let bytes = withUnsafeBytes(of: raw) { Array($0) }
                    if let found = SourceAddress(bytes: bytes), !addresses.contains(found) { addresses.append(found) }
                default:
                    continue
                }
            }
            return addresses
        }
    }

    /// Why a host name did not resolve, in the resolver's words.
    struct ResolveError: Swift.Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
