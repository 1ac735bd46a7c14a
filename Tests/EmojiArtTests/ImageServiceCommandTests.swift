import Dispatch
@testable import EmojiArtApp
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCaching
import ImageCache
import ImageService
import Imaging
import Testing
import TestSupport

/// The image service as an operator meets it: `emojiart images serve` and `images sign` run as a
/// person runs them, imgproxy's environment variables carrying over, and the service inside the
/// app under `/img/`.
@Suite(.timeLimit(.minutes(3))) struct ImageServiceCommandTests {
    static let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
    let commands = CommandLineTests()

    static func photo() throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ImagingTests/Fixtures/landscape.jpg")
        return Array(try Data(contentsOf: url))
    }

    @Test func withoutAKeyOrAnAllowedSourceNothingStartsAndTheMessageSaysWhatToGive() async throws {
        let noKey = try await commands.run(["images", "serve", "--port", "0", "--allowed-source", "https://images.example.com/"])
        #expect(noKey.status != 0 && noKey.output.contains("needs a key") && noKey.output.contains("--unsigned"), "\(noKey.output)")
        let noSource = try await commands.run(["images", "serve", "--port", "0", "--unsigned"])
        #expect(noSource.status != 0 && noSource.output.contains("--allowed-source"), "\(noSource.output)")
        // The app too: a service flag without an allowed source is not passed over in silence.
        let appNoSource = try await commands.run(["app", "--gallery", "http://127.0.0.1:1", "--port", "0", "--unsigned"])
        #expect(appNoSource.status != 0 && appNoSource.output.contains("--allowed-source"), "\(appNoSource.output)")

        let directory = TemporaryDirectory("image-service-key")
        let file = directory.url.appendingPathComponent("imgproxy.env")
        try Data("IMGPROXY_KEY=\(Self.key)\nIMGPROXY_SALT=\(Self.salt)\n".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        let open = try await commands.run(["images", "sign", "--key-file", file.path, "rs:fit:10:10", "http://example.com/a.png"])
        #expect(open.status != 0 && open.output.contains("not private") && open.output.contains("chmod 600"), "\(open.output)")
    }

    /// `images sign` makes the very URLs PyPI's imgproxy builder made (its fixture), keyed by flags
    /// or by a private key file.
    @Test func signPrintsTheURLImgproxysBuilderMakes() async throws {
        let directory = TemporaryDirectory("image-service-key")
        let file = directory.url.appendingPathComponent("imgproxy.env")
        try Data("IMGPROXY_KEY=\(Self.key)\nIMGPROXY_SALT=\(Self.salt)\n".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let expected = "https://img.example.com/DRW8tteBk7YX1fbzJosydW4eKSXzaMogCM0L-9LhcZA/g:sm/rs:fill:300:400:0/aHR0cHM6Ly9leGFtcGxlLmNvbS9pbWFnZXMvY3VyaW9zaXR5LmpwZw.png"
        for keys in [["--key", Self.key, "--salt", Self.salt], ["--key-file", file.path]] {
            let outcome = try await commands.run(
                ["images", "sign"] + keys + ["--base", "https://img.example.com", "--base64", "--extension", "png", "g:sm/rs:fill:300:400:0", "https://example.com/images/curiosity.jpg"]
            )
            #expect(outcome.status == 0 && outcome.output == expected + "\n", "\(outcome.output)")
        }
    }

    /// A started `images serve`: the lines it printed and its address.
    final class RunningService: Sendable {
        let process: Process
        let lines: [String]
        let base: String?

        init(_ arguments: [String], environment: [String: String]) async throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLineTests.binary)
            process.arguments = ["images", "serve", "--port", "0"] + arguments
            process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("IMGPROXY_") }.merging(environment) { $1 }
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            self.process = process
            lines = await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    var text = ""
                    while !text.contains("image service: open") {
                        let chunk = pipe.fileHandleForReading.availableData
                        if chunk.isEmpty { break }
                        text += String(decoding: chunk, as: UTF8.self)
                    }
                    continuation.resume(returning: text.split(separator: "\n").map(String.init))
                }
            }
            // "image service: open http://127.0.0.1:PORT/<signature>/...": up to the path.
            base = lines.lazy.compactMap { line -> String? in
                guard let start = line.range(of: "image service: open http://") else { return nil }
                return "http://" + line[start.upperBound...].prefix { $0 != "/" }
            }.first
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }

    @Test func imgproxysEnvironmentCarriesOverAndTheStartSaysWhoMayAsk() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.photo(), contentType: "image/jpeg"))
        try await origin.run { originURL in
            let cache = TemporaryDirectory("image-service-cache")
            let service = try await RunningService(["--cache-dir", cache.url.path], environment: [
                "IMGPROXY_KEY": Self.key, "IMGPROXY_SALT": Self.salt, "IMGPROXY_SIGNATURE_SIZE": "8",
                "IMGPROXY_ALLOWED_SOURCES": originURL.absoluteString + "/", "IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "true",
                "IMGPROXY_TTL": "60",
            ])
            defer { service.stop() }
            let base = try #require(service.base, "\(service.lines)")
            #expect(service.lines.contains { $0.contains("URLs must be signed") && $0.contains("8-byte") }, "\(service.lines)")
            let signer = try Signer(keyHex: Self.key, saltHex: Self.salt, signatureSize: 8)
            let url = base + signer.path(options: ["rs:fit:100:100"], source: originURL.absoluteString + "/images/photo.jpg")
            let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 200 && http.value(forHTTPHeaderField: "Cache-Control") == "public, max-age=60")
            #expect(try Imaging().probe(Array(data)).width == 100)
            // A full-size signature is another key's as far as this service knows.
            let full = base + (try Signer(keyHex: Self.key, saltHex: Self.salt)).path(options: ["rs:fit:100:100"], source: originURL.absoluteString + "/images/photo.jpg")
            let (_, refused) = try await URLSession.shared.data(from: URL(string: full)!)
            #expect((refused as? HTTPURLResponse)?.statusCode == 403)
        }
        let unsigned = try await RunningService(["--unsigned", "--allowed-source", "https://images.example.com/"], environment: [:])
        defer { unsigned.stop() }
        #expect(unsigned.lines.contains { $0.contains("WARNING: unsigned URLs are accepted") }, "\(unsigned.lines)")
    }

    /// Inside the app, under `/img/`: a plain source's `//` passes there while the app's other
    /// routes keep their one spelling, and the app's `/metrics` counts the service.
    @Test func theAppServesTheServiceUnderImg() async throws {
        let origin = TestOrigin()
        origin.set("photo.jpg", .image(try Self.photo(), contentType: "image/jpeg"))
        try await origin.run { originURL in
            try await withGallery { galleryURL, pipeline in
                let signer = try Signer(keyHex: Self.key, saltHex: Self.salt)
                let service = ImageServiceConfiguration(
                    signing: .required(signer), sources: SourcePolicy(allowedSources: [originURL.absoluteString + "/"], allowsLoopback: true),
                    pathPrefix: "/img"
                )
                let directory = TemporaryDirectory("app-image-service")
                var configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust)
                configuration.imageService = try ImageServer(configuration: service, pipeline: ImageServer.makePipeline(service, diskDirectory: directory.url))
                try await withLiveServer({ try await EmojiArtApp.buildApplication(configuration, pipeline: pipeline, onServerRunning: $0) }) { port in
                    let source = originURL.absoluteString + "/images/photo.jpg"
                    // The source written as people write it, `//` and all (signed as written).
                    let path = signer.sign("/rs:fit:100:100/plain/" + source)
                    try await RawHTTPConnection.with(port: port) { connection in
                        try await connection.send(["/img" + path, "//health"], fields: ["Host: 127.0.0.1"])
                        let image = try #require(try await connection.response())
                        #expect(image.status == 200, "\(image)")
                        #expect(try Imaging().probe(image.body).width == 100)
                        #expect(try #require(try await connection.response()).status == 404, "the app's routes keep their one spelling")
                    }
                    let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!)
                    let text = String(decoding: data, as: UTF8.self)
                    #expect(text.contains(#"emojiart_image_service_requests_total{status="200"} 1"#), "\(text.suffix(3000))")
                    #expect(text.contains("emojiart_cache_hits_total"), "the app's own counters too")
                }
            }
        }
    }
}
