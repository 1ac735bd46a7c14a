public import ServiceLifecycle

/// Runs `make`'s application on a real socket until `body` returns, then shuts it down.
///
/// `make` receives the callback to pass as the application's `onServerRunning`; the port it
/// reports (bind to port 0 for a free one) is handed to `body`. Generic over `Service`, not
/// Hummingbird's `ApplicationProtocol`, so `run()` is the application's own (an application may
/// replace the protocol extension's, as the gallery does).
public func withLiveServer<App: Service, T: Sendable>(
    _ make: (@escaping @Sendable (Int) async -> Void) async throws -> App,
    _ body: (_ port: Int) async throws -> T
) async throws -> T {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let app = try await make { port in continuation.yield(port) }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await app.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        let result = try await body(port)
        group.cancelAll()
        return result
    }
}
