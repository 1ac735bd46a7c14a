import Foundation

/// Free TCP ports on 127.0.0.1, for processes that must be told their port before they start
/// (nginx's upstreams, the cluster's instances).
public enum LoopbackPort {
    /// A port no socket is bound to now: bound to port 0 and released, so the kernel chose it.
    /// Another process may take it before the caller binds it; the caller reports that as a
    /// failure to start.
    public static func free() -> Int {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socketFD) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
