import EmojiArtApp
import Foundation
import Testing
import TestSupport

/// Issue 48, part 2: `emojiart cluster` wrote `worker_rlimit_nofile 26448` whatever the machine's
/// hard limit on open files, and nginx, not allowed to raise it, only logged
/// `setrlimit(RLIMIT_NOFILE, 26448) failed`: its workers then ran out of descriptors long before
/// their 8,192 connections. Now the connections are fitted under the hard limit, or the cluster
/// stops before it starts anything, saying what to raise.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DescriptorLimitTests {
    /// The configuration computed for a hard limit fits under it, with as many connections as
    /// fit (all 8,192 when they do).
    @Test(arguments: [12_112, 12_113, 20_000, 26_447, 26_448, 65_536, 1_048_576])
    func theConfigurationFitsUnderTheHardLimit(hardLimit: Int) throws {
        let connections = try EdgeConfiguration.workerConnections(fittingHardLimit: hardLimit)
        let descriptors = EdgeConfiguration.descriptors(forWorkerConnections: connections)
        #expect(descriptors <= hardLimit, "\(connections) connections need \(descriptors)")
        #expect(connections >= EdgeConfiguration.minimumWorkerConnections && connections <= EdgeConfiguration.workerConnections)
        if connections < EdgeConfiguration.workerConnections {
            #expect(EdgeConfiguration.descriptors(forWorkerConnections: connections + 1) > hardLimit, "not one more fits")
        }
        #expect((connections == EdgeConfiguration.workerConnections) == (hardLimit >= 26_448))
        let edge = try EdgeConfiguration(instancePorts: [1], galleryPort: 2, edgePort: 3, shieldPort: 4, cacheDirectory: "/tmp/c")
        let conf = try edge.nginxConf(prefix: "/tmp/p", workerConnections: connections)
        #expect(conf.contains("worker_rlimit_nofile \(descriptors);") && conf.contains("events { worker_connections \(connections); }"))
        #expect(try EdgeConfiguration.workerConnections(fittingHardLimit: nil) == EdgeConfiguration.workerConnections, "unlimited")
    }

    /// Below the minimum edge, the error names the limit found, what is needed and how to raise it.
    @Test(arguments: [256, 1_024, 4_096, 12_111])
    func aTooSmallHardLimitIsAClearError(hardLimit: Int) {
        let error = #expect(throws: EdgeConfiguration.DescriptorLimitTooLow.self) {
            try EdgeConfiguration.workerConnections(fittingHardLimit: hardLimit)
        }
        #expect(error == .init(hardLimit: hardLimit, needed: 12_112))
        let message = error?.description ?? ""
        #expect(message.contains("ulimit -Hn) is \(hardLimit)") && message.contains("needs 12112") && message.contains("LimitNOFILE=26448"), "\(message)")
    }

    /// Real nginx, one worker, configured for this machine's own hard limit as `cluster` does:
    /// it starts without the `setrlimit` alert. (On this machine, hard limit 20,000, the
    /// configuration from before logged `setrlimit(RLIMIT_NOFILE, 26448) failed`.)
    @Test func nginxConfiguredForThisMachinesHardLimitSetsItsDescriptorLimit() async throws {
        let connections = try EdgeConfiguration.workerConnections(fittingHardLimit: EdgeConfiguration.hardDescriptorLimit())
        try await EdgeRouteTests.withEdge(workers: 1, workerConnections: connections) { (edgePort, errorLog) async throws in
            #expect(try await EdgeRouteTests.ask(edgePort, "/health").status == 200)
            let log = (try? String(contentsOf: errorLog, encoding: .utf8)) ?? ""
            #expect(!log.contains("setrlimit"), "\(log)")
        }
    }

    /// `emojiart cluster` under a hard limit too low stops before it starts anything, and says so.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")), .timeLimit(.minutes(1)))
    func aClusterUnderTooLowAHardLimitStopsSayingWhatToRaise() async throws {
        let outcome = try await CommandLineTests().run(
            ["--nofile=4096:4096", CommandLineTests.binary, "cluster", "--port", "0"], executable: "/usr/bin/prlimit"
        )
        #expect(outcome.status != 0)
        #expect(outcome.output.contains("the hard limit on open files (ulimit -Hn) is 4096"), "\(outcome.output)")
        #expect(!outcome.output.contains("cluster: open"), "nothing started")
    }
}
