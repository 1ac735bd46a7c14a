#if canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 where nothing listens and nothing else can start to while it exists: a
/// socket bound to it but not listening, so a connection to it is refused at once. A stopped
/// server's port is not that: another test running in parallel may bind it and answer.
public final class ClosedPort: Sendable {
    /// The port.
    public let port: Int
    private let descriptor: Int32

    /// Binds a free port, without `SO_REUSEADDR`: the kernel gives no server this port while it
    /// is held. It is closed when this goes.
    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ClosedPortError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(descriptor, raw, length) == 0 && getsockname(descriptor, raw, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw ClosedPortError("bind: errno \(errno)")
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:PORT`.
    public var url: String { "http://127.0.0.1:\(port)" }

    deinit {
        Glibc.close(descriptor)
    }
}

/// Why a ``ClosedPort`` could not be made.
public struct ClosedPortError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
