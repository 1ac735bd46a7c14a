import ArgumentParser
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

    /// Refuses a port outside 0...65535: the socket layer took 70000 as 4464, and -1 failed with
    /// a message that named no option.
    static func checkPort(_ port: Int, option: String) throws {
        guard (0...65_535).contains(port) else { throw ValidationError("\(option) must be 0...65535 (0 picks a free one), got \(port)") }
    }

    func validate() throws {
        try Self.checkPort(port, option: "--port")
        guard (1...86_400).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be at least 1 second and at most a day (86400)") }
    }
}
