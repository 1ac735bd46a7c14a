import Logging
public import ServiceLifecycle

/// Runs `make`'s application on a real socket until `body` returns, then shuts it down.
///
/// `make` receives the callback to pass as the application's `onServerRunning`; the port it
/// reports (bind to port 0 for a free one) is handed to `body`. Generic over `Service`, not
/// Hummingbird's `ApplicationProtocol`, so `run()` is the application's own (an application may
/// replace the protocol extension's, as the gallery does).
///
/// It stops as the app stops on SIGTERM, gracefully: a connection accepted at that moment is
/// served and closed. Cancelling the server's task instead can leave such a connection
/// unserved, which NIO traps on in debug builds (apple/swift-nio#3481), taking every test down.
/// A server still running ``gracefulStopLimit`` after the signal (a connection left open with an
/// answer owed, such as a request a test held at a gate) is cancelled by its service group.
public func withLiveServer<App: Service, T: Sendable>(
    _ make: (@escaping @Sendable (Int) async -> Void) async throws -> App,
    _ body: (_ port: Int) async throws -> T
) async throws -> T {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let app = try await make { port in continuation.yield(port) }
    var configuration = ServiceGroupConfiguration(
        services: [app], gracefulShutdownSignals: [], cancellationSignals: [], logger: Logger(label: "live-server")
    )
    configuration.maximumGracefulShutdownDuration = gracefulStopLimit
    let services = ServiceGroup(configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            defer { continuation.finish() }  // a server that ends before it runs reports no port
            try await services.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await group.next()  // its error (a port in use, say)
            throw LiveServerError("the server stopped before it was running")
        }
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body(port)) } catch { outcome = .failure(error) }
        await services.triggerGracefulShutdown()
        _ = try? await group.next()  // the server stopped (cancelled by its group past the limit)
        return try outcome.get()
    }
}

/// How long ``withLiveServer(_:_:)`` lets a server stop gracefully before it cancels it.
public let gracefulStopLimit: Duration = .seconds(10)

/// What ``withLiveServer(_:_:)`` throws when the server never ran.
public struct LiveServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
