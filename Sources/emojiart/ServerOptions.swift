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
    var port: Int?

    @Flag(inversion: .prefixedNo, help: "Answer images already in memory on the event loop, byte for byte as the routes would (on by default; --no-fast-lane sends every request through the router, to compare). The gallery never uses it while faults or --hold-images are on.")
    var fastLane = true
}
