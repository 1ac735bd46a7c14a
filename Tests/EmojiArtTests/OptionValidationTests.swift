import Foundation
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
    /// Without an idle time-out a client could hold connections open with half a request head.
    @Test(arguments: [["app", "--gallery", "http://127.0.0.1:9"], ["gallery"], ["serve"]])
    func anIdleTimeoutUnderOneSecondOrOverADayIsRefused(command: [String]) async throws {
        for value in ["0", "86401", "99999999999"] {
            let outcome = try await run(command + ["--idle-timeout", value])
            #expect(outcome.status == 64, "a usage error: \(outcome.output)")
            #expect(outcome.output.contains("--idle-timeout must be at least 1 second and at most a day"), "\(outcome.output)")
        }
    }
}
