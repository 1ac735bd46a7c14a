import Foundation
import GalleryServer
import Testing
import TestSupport

/// Options that would open a hole if taken as given are refused before anything starts.
extension CommandLineTests {
    @Test(arguments: ["", "-", "not a fingerprint", String(repeating: "A", count: 42), String(repeating: "A", count: 42) + "="])
    func aGalleryKeyThatIsNoFingerprintIsRefused(key: String) async throws {
        // An unset variable in a unit file gives an empty key: that must not mean trust on first use.
        let outcome = try await run(["sync", "--gallery", "http://127.0.0.1:9", "--gallery-key=\(key)"])
        #expect(outcome.status == 64, "a usage error: \(outcome.output)")
        #expect(outcome.output.contains(key.isEmpty ? "Missing value for '--gallery-key" : "--gallery-key must be a key fingerprint"), "\(outcome.output)")
    }

    @Test func aWorkDirectoryNginxCannotTakeIsRefused() async throws {
        let outcome = try await run(["cluster", "--port", "0", "--work-dir", data.url.path + "/a\"b"])
        #expect(outcome.status == 64, "a usage error: \(outcome.output)")
        #expect(outcome.output.contains("cannot go into nginx's configuration"), "\(outcome.output)")
        #expect(!FileManager.default.fileExists(atPath: data.url.path + "/a\"b"), "nothing was made")
    }
}

extension CommandLineTests {
    /// A port outside 0...65535 is refused by name: the socket layer took 70000 as 4464 (the
    /// server answered somewhere nobody asked for) and -1 failed with a resolver's message.
    @Test(arguments: [["app", "--gallery", "http://127.0.0.1:9", "--port"], ["gallery", "--port"], ["serve", "--port"],
                      ["serve", "--gallery-port"], ["cluster", "--port"]])
    func aPortOutsideItsRangeIsRefused(command: [String]) async throws {
        for value in ["65536", "70000", "-1"] {
            let outcome = try await run(command.dropLast() + ["\(command.last!)=\(value)"])
            #expect(outcome.status == 64, "a usage error: \(outcome.output)")
            #expect(outcome.output.contains("\(command.last!) must be 0...65535 (0 picks a free one), got \(value)"), "\(outcome.output)")
        }
    }

    /// The default command with its gallery's or its app's port in use: it waited forever (for a
    /// gallery that had failed to start; for the gallery to stop after the app had failed). It
    /// now ends with the option to change.
    @Test(.timeLimit(.minutes(3))) func theDefaultCommandOnABusyPortSaysWhichAndEnds() async throws {
        let cache = TemporaryDirectory()
        try await withLiveServer({ try await Gallery.buildApplication(.init(port: 0), onServerRunning: $0) }) { busy in
            let outcome = try await run(["--port", "0", "--gallery-port", "\(busy)", "--cache-dir", cache.url.path])
            #expect(outcome.status == 1, "\(outcome.output)")
            #expect(outcome.output.contains("port \(busy) is already in use: pass --gallery-port with another port"), "\(outcome.output)")
            // And the app's port: its error ended the command only once the gallery had stopped,
            // that is never.
            let app = try await run(["--port", "\(busy)", "--gallery-port", "0", "--cache-dir", cache.url.path])
            #expect(app.status == 1, "\(app.output)")
            #expect(app.output.contains("port \(busy) is already in use: pass --port with another port"), "\(app.output)")
        }
    }

    /// Without an idle time-out a client could hold connections open with half a request head.
    @Test(arguments: [["app", "--gallery", "http://127.0.0.1:9"], ["gallery"], ["serve"]])
    func anIdleTimeoutUnderOneSecondOrOverADayIsRefused(command: [String]) async throws {
        for value in ["0", "86401", "99999999999"] {
            let outcome = try await run(command + ["--idle-timeout", value])
            #expect(outcome.status == 64, "a usage error: \(outcome.output)")
            #expect(outcome.output.contains("--idle-timeout must be at least 1 second and at most a day"), "\(outcome.output)")
        }
    }

    /// A request deadline of 0 would cut every connection, and a cap of 0 connections would
    /// serve none: both are refused before anything starts.
    @Test(arguments: [["app", "--gallery", "http://127.0.0.1:9"], ["gallery"], ["serve"]])
    func aRequestTimeoutOrAConnectionCapOutOfRangeIsRefused(command: [String]) async throws {
        for value in ["0", "86401"] {
            let outcome = try await run(command + ["--request-timeout", value])
            #expect(outcome.status == 64, "a usage error: \(outcome.output)")
            #expect(outcome.output.contains("--request-timeout must be at least 1 second and at most a day"), "\(outcome.output)")
        }
        let outcome = try await run(command + ["--max-connections", "0"])
        #expect(outcome.status == 64, "a usage error: \(outcome.output)")
        #expect(outcome.output.contains("--max-connections must be at least 1, got 0"), "\(outcome.output)")
    }
}
