import ArgumentParser
import FastLane
import Foundation
import GalleryServer
import Hummingbird
import Logging
import MessageSignatures
import NIOCore

/// `--host`, `--port` and `--[no-]fast-lane`, shared by the commands that serve HTTP.
struct ServerOptions: ParsableArguments {
    @Option(help: "Address to bind. Loopback by default; 0.0.0.0 exposes the server to the network.")
    var host = "127.0.0.1"

    @Option(help: "Port to bind; 0 picks a free one.")
    var port = 8080

    @Flag(inversion: .prefixedNo, help: "Answer images already in memory on the event loop, byte for byte as the routes would (on by default; --no-fast-lane sends every request through the router, to compare). The gallery never uses it while faults or --hold-images are on.")
    var fastLane = true

    @Option(help: ArgumentHelp("Close a connection that stays quiet this long: no complete request head, or no request after the last answer, or, with the fast lane, taking none of an answer's bytes (an event stream is not cut while its client takes it). Keep it above the idle time of the clients' connection pools (nginx's and AsyncHTTPClient's are 60 s).", valueName: "seconds"))
    var idleTimeout = 75

    /// ``idleTimeout`` as NIO takes it.
    var idleTime: TimeAmount { .seconds(Int64(idleTimeout)) }

    @Option(help: ArgumentHelp("The time a client has to send a whole request, head and body, and the longest an answer (an event stream's too) waits with none of its bytes taken: past either the connection is closed, however steadily the client trickles. A request with a body is answered 413 (no route takes one).", valueName: "seconds"))
    var requestTimeout = 30

    @Option(help: ArgumentHelp("The most connections open at once, per server; one more is closed as soon as it is accepted and counted (connections_cut{reason=\"over_limit\"} in /metrics). Default: the descriptor limit (ulimit -n) less \(ConnectionLimits.reservedDescriptors) for the disk cache and the gallery's connections, shared by the servers of the process.", valueName: "count"))
    var maxConnections: Int?

    /// ``requestTimeout`` as NIO takes it.
    var requestTime: TimeAmount { .seconds(Int64(requestTimeout)) }

    /// ``maxConnections``, or the default for one of the `servers` this process runs.
    func connectionCap(servers: Int = 1) -> Int {
        maxConnections ?? ConnectionLimits.defaultMaxConnections(servers: servers)
    }

    /// Refuses a port outside 0...65535: the socket layer took 70000 as 4464, and -1 failed with
    /// a message that named no option.
    static func checkPort(_ port: Int, option: String) throws {
        guard (0...65_535).contains(port) else { throw ValidationError("\(option) must be 0...65535 (0 picks a free one), got \(port)") }
    }

    func validate() throws {
        try Self.checkPort(port, option: "--port")
        guard (1...86_400).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be at least 1 second and at most a day (86400)") }
        guard (1...86_400).contains(requestTimeout) else { throw ValidationError("--request-timeout must be at least 1 second and at most a day (86400)") }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be at least 1, got \(maxConnections)") }
    }
}
