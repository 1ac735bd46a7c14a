import ArgumentParser
import Dispatch
import EmojiArtApp
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCaching
import GalleryServer
import Hummingbird
import Logging
import MessageSignatures
import ServiceLifecycle

/// `emojiart cluster`: the gallery, N app instances with caches of their own, and nginx in front
/// (the edge, sharded by piece, and the origin shield), on 127.0.0.1, for people to try and for
/// tests. Ctrl-C (or SIGTERM) stops everything it started.
struct ClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Start a local cluster: the gallery, N app instances, and nginx in front (an edge and an origin shield).",
        discussion: """
            The instances are `emojiart app` processes, each with its own cache directory under --work-dir, and fetch the \
            gallery through nginx's origin shield, so the whole cluster asks the gallery once per piece. The edge shards \
            image requests by piece (hash ... consistent) and keeps their answers (proxy_cache, with --http-cache \
            immutable by default); one browser stays with one instance for pages and the event stream, and the toolbar \
            names it. The nginx configuration is written to WORK/nginx/nginx.conf from the same template as \
            deploy/nginx/emojiart.conf, with as many connections a worker (at most 8192) as the hard limit on open \
            files (ulimit -Hn) has descriptors for; under 12112 it starts nothing and says what to raise. Prints the URL to open and each instance's address and pid; Ctrl-C or SIGTERM \
            stops the instances and nginx and leaves no process behind.
            """
    )

    @Option(help: "App instances behind the edge.")
    var instances: Int = 3

    @Option(help: "Port of the edge (the address to open); 0 picks a free one.")
    var port: Int = 8080

    @Option(help: ArgumentHelp("Where the instances' caches, nginx's caches and its configuration go (default: a new temporary directory, removed at exit).", valueName: "directory"))
    var workDir: String?

    @Option(help: ArgumentHelp("The instances' --http-cache.", valueName: "mode"))
    var httpCache: HTTPCacheMode = .immutable

    @Option(help: ArgumentHelp("The instances' --warm-up-budget: MiB of thumbnail variants each makes ahead once its feed is authenticated (0: none).", valueName: "MiB"))
    var warmUpBudget = 32

    @Option(help: "Seed of the gallery's feed.")
    var seed: UInt64 = GalleryConfiguration.defaultSeed

    @OptionGroup(title: "Image service (every instance serves it at /img/ when an allowed source is given; the edge shards it by source)") var imageService: ImageServiceOptions

    @Flag(help: "Serve the edge over TLS and HTTP/2 with a new self-signed certificate for 127.0.0.1 (made with openssl), and print the SHA-256 of its public key for Chromium's --ignore-certificate-errors-spki-list. The instances stay HTTP/1.1 behind nginx.")
    var tls = false

    func validate() throws {
        guard (1...32).contains(instances) else { throw ValidationError("--instances must be 1...32") }
        try ServerOptions.checkPort(port, option: "--port")
        if let workDir, !EdgeConfiguration.isUsableInConfiguration(URL(fileURLWithPath: workDir).standardizedFileURL.path) {
            throw ValidationError("--work-dir \(workDir) cannot go into nginx's configuration: choose a directory whose path has no quotes, backslashes, $ or control characters")
        }
        // Started by root, nginx's workers run as another user (nobody): every directory above
        // its caches must let others through, or each cached answer is a 500.
        if let workDir, getuid() == 0 {
            var directory = URL(fileURLWithPath: workDir).standardizedFileURL
            while directory.path != "/" {
                if let mode = (try? FileManager.default.attributesOfItem(atPath: directory.path))?[.posixPermissions] as? Int, mode & 0o001 == 0 {
                    throw ValidationError("--work-dir \(workDir): nginx's workers (not root) cannot pass through \(directory.path) (mode \(String(mode, radix: 8))): chmod o+x it, or choose another directory")
                }
                directory.deleteLastPathComponent()
            }
        }
    }

    func run() async throws {
        // A setting of the image service that cannot be used stops the start here, not in each instance.
        if imageService.isGiven { _ = try imageService.configuration(pathPrefix: EdgeConfiguration.imageServicePrefix) }
        guard let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].first(where: FileManager.default.isExecutableFile) else {
            throw CommandFailure("nginx is not installed: run scripts/bootstrap (it installs Debian's nginx-light)")
        }
        // nginx's workers inherit this process's hard limit on descriptors: the connections each
        // takes are fitted under it (nginx only logs a `worker_rlimit_nofile` it may not set), or
        // the cluster does not start, saying what to raise.
        let hardLimit = EdgeConfiguration.hardDescriptorLimit()
        let workerConnections: Int
        do {
            workerConnections = try EdgeConfiguration.workerConnections(fittingHardLimit: hardLimit)
        } catch {
            throw CommandFailure("\(error)")
        }
        if workerConnections < EdgeConfiguration.workerConnections, let hardLimit {
            say("cluster: the hard limit on open files is \(hardLimit) (ulimit -Hn): each nginx worker takes \(workerConnections) connections, not \(EdgeConfiguration.workerConnections); raise the limit to \(EdgeConfiguration.descriptors(forWorkerConnections: EdgeConfiguration.workerConnections)) for all of them")
        }

        let temporary = workDir == nil
        let work = workDir.map { URL(fileURLWithPath: $0).standardizedFileURL }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("emojiart-cluster-\(UUID().uuidString)")
        defer { if temporary { try? FileManager.default.removeItem(at: work) } }
        for folder in ["nginx", "nginx-cache/temp"] {
            try FileManager.default.createDirectory(at: work.appendingPathComponent(folder), withIntermediateDirectories: true)
        }

        let certificate = tls ? try SelfSignedCertificate.make(in: work.appendingPathComponent("tls")) : nil

        // The gallery, in this process, with a key the instances pin.
        let key = try gallerySigningKey(nil)
        let (galleryPorts, galleryPort) = AsyncStream.makeStream(of: Int.self)
        let gallery = try await Gallery.buildApplication(
            .init(host: "127.0.0.1", port: 0, seed: seed, signingKey: key), logger: Logger(label: "gallery")
        ) { galleryPort.yield($0) }
        // Stopped by a graceful shutdown, never by cancelling its task: a Hummingbird server
        // cancelled with a connection not yet handled can trap in NIO (the instances keep
        // connections to it open through the shield).
        let galleryGroup = ServiceGroup(configuration: .init(services: [gallery], gracefulShutdownSignals: [], logger: Logger(label: "gallery")))
        let galleryTask = Task { try await galleryGroup.run() }
        func stopGallery() async {
            await galleryGroup.triggerGracefulShutdown()
            _ = try? await galleryTask.value
        }
        var galleryIterator = galleryPorts.makeAsyncIterator()
        guard let galleryPortNumber = await galleryIterator.next() else { throw CommandFailure("the gallery did not start") }

        // nginx and the instances must be told their ports before they start: a port chosen free
        // can be taken by another process before its owner binds it. Then the fleet does not come
        // up; it is stopped and started again on other ports, twice at most.
        var attempt = 0
        var fleet: (edge: EdgeConfiguration, proxy: Process, children: [Process])?
        while fleet == nil {
            attempt += 1
            let edge = try EdgeConfiguration(
                instancePorts: (0..<instances).map { _ in LoopbackPort.free() }, galleryPort: galleryPortNumber,
                edgePort: port == 0 ? LoopbackPort.free() : port, shieldPort: LoopbackPort.free(),
                cacheDirectory: work.appendingPathComponent("nginx-cache").path, tls: certificate?.files
            )
            let prefix = work.appendingPathComponent("nginx").path
            let conf = prefix + "/nginx.conf"
            try edge.nginxConf(prefix: prefix, workerConnections: workerConnections).write(toFile: conf, atomically: true, encoding: .utf8)
            do {
                let (proxy, children) = try startFleet(edge, nginx: nginx, prefix: prefix, configuration: conf, key: key, work: work)
                // Ready once nginx and every instance answer.
                let ready = await waitUntilAnswering(
                    // With TLS the edge's certificate is its own: nginx is known up by the shield,
                    // which it serves from the same configuration (one bad listen stops both).
                    [URL.origin(host: "127.0.0.1", port: tls ? edge.shieldPort : edge.edgePort) + "/health"]
                        + edge.instancePorts.map { URL.origin(host: "127.0.0.1", port: $0) + "/health" },
                    while: { children.allSatisfy(\.isRunning) }
                )
                if ready {
                    fleet = (edge, proxy, children)
                    break
                }
                stop(children)
            } catch {
                await stopGallery()
                throw error
            }
            guard attempt < 3 else {
                await stopGallery()
                throw CommandFailure("the cluster did not come up: see \(prefix)/error.log; is port \(edge.edgePort) free? (--port 0 picks one)")
            }
            FileHandle.standardError.write(Data("cluster: did not come up (a port taken meanwhile?); trying other ports\n".utf8))
        }
        guard let (edge, proxy, children) = fleet else {
            await stopGallery()
            return
        }
        func stopAll() async {
            stop(children)
            await stopGallery()
        }
        if let certificate {
            say("cluster: open \(URL.origin(scheme: "https", host: "127.0.0.1", port: edge.edgePort))/ (HTTP/2; self-signed: Chromium takes it with --ignore-certificate-errors-spki-list=\(certificate.spkiSHA256))")
        } else {
            say("cluster: open \(URL.origin(host: "127.0.0.1", port: edge.edgePort))/")
        }
        for (index, app) in children.dropFirst().enumerated() {
            say("cluster: instance \(index + 1): \(URL.origin(host: "127.0.0.1", port: edge.instancePorts[index])) pid \(app.processIdentifier)")
        }
        say("cluster: nginx pid \(proxy.processIdentifier), shield \(URL.origin(host: "127.0.0.1", port: edge.shieldPort)), gallery \(URL.origin(host: "127.0.0.1", port: galleryPortNumber)), work \(work.path)")

        // Until Ctrl-C or SIGTERM, or until nginx stops.
        let (signals, received) = AsyncStream.makeStream(of: Int32.self)
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { received.yield(number) }
            source.resume()
            return source
        }
        var iterator = signals.makeAsyncIterator()
        _ = await iterator.next()
        say("cluster: stopping")
        sources.forEach { $0.cancel() }
        await stopAll()
    }
}

extension ClusterCommand {
    /// Starts `nginx` with `configuration`, then one `emojiart app` per instance port of `edge`;
    /// returns them, nginx first. A process that cannot be started stops the others and throws.
    func startFleet(
        _ edge: EdgeConfiguration, nginx: String, prefix: String, configuration: String, key: SigningKey, work: URL
    ) throws -> (proxy: Process, children: [Process]) {
        let proxy = Process()
        proxy.executableURL = URL(fileURLWithPath: nginx)
        proxy.arguments = ["-p", prefix, "-c", configuration, "-g", "daemon off;"]
        try proxy.run()
        var children = [proxy]
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        for (index, instancePort) in edge.instancePorts.enumerated() {
            let app = Process()
            app.executableURL = executable
            app.arguments = [
                "app", "--port", "\(instancePort)", "--gallery", URL.origin(host: "127.0.0.1", port: edge.shieldPort),
                // The shield passes the gallery's signed answers on: they name the gallery itself.
                "--gallery-origin", URL.origin(host: "127.0.0.1", port: edge.galleryPort),
                "--gallery-key=\(key.fingerprint)", "--cache-dir", work.appendingPathComponent("instance-\(index + 1)").path,
                "--http-cache", httpCache.rawValue, "--instance-name", "\(index + 1) of \(instances) (port \(instancePort))",
                // The edge passes on the Host people open it by: its own address.
                "--allowed-host", edge.host, "--warm-up-budget", "\(warmUpBudget)",
                // The edge names each client: its event streams are counted by its address.
                "--behind-edge",
            ] + imageService.forwarded
            app.standardOutput = FileHandle.nullDevice
            do {
                try app.run()
            } catch {
                stop(children)
                throw CommandFailure("could not start instance \(index + 1): \(error)")
            }
            children.append(app)
        }
        return (proxy, children)
    }
}

/// Stops `processes` (SIGTERM) and waits for each to exit.
private func stop(_ processes: [Process]) {
    for process in processes where process.isRunning { kill(process.processIdentifier, SIGTERM) }
    for process in processes { process.waitUntilExit() }
}

/// Waits until every URL answers 200, polling, while `running` holds: a child process has no
/// other way to say it is ready. At most 120 s.
private func waitUntilAnswering(_ urls: [String], while running: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(120)
    var pending = urls
    while !pending.isEmpty, Date() < deadline, running() {
        var still: [String] = []
        for url in pending {
            let answered = (try? await URLSession.shared.data(from: URL(string: url)!)).map { ($0.1 as? HTTPURLResponse)?.statusCode == 200 } ?? false
            if !answered { still.append(url) }
        }
        pending = still
        if !pending.isEmpty { try? await Task.sleep(for: .milliseconds(100)) }
    }
    return pending.isEmpty
}
