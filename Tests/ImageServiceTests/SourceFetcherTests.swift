import Foundation
import ImageCache
import Testing
import TestSupport
@testable import ImageService

/// The source fetcher against a real origin on 127.0.0.1: what it fetches, and each way a source
/// could reach what the service must not (each refusal test names the check it needs).
@Suite(.timeLimit(.minutes(3))) struct SourceFetcherTests {
    let origin = TestOrigin()

    init() {
        origin.set("a", .image(png))
    }

    /// A policy that takes the origin: loopback allowed, its prefix.
    /// A minute for each fetch, not the default 10 s: a chain of redirects, each on a new
    /// connection, took longer than 10 s with the whole suite running on two cores; only the time
    /// limit's own tests set a short one.
    func allowing(_ base: URL, _ change: (inout SourcePolicy) -> Void = { _ in }) -> SourcePolicy {
        var policy = SourcePolicy(allowedSources: ["\(base.absoluteString)/images/"], allowsLoopback: true, timeout: .seconds(60))
        change(&policy)
        return policy
    }

    /// The error `body` throws; fails the test when it throws none.
    func failure(_ body: () async throws -> some Any) async -> (any Error)? {
        do {
            _ = try await body()
            Issue.record("expected an error")
            return nil
        } catch {
            return error
        }
    }

    @Test func fetchesAnAllowedSourceThroughThePipeline() async throws {
        try await origin.run { base in
            let pipeline = ImagePipeline(configuration: .init(fetcher: SourceFetcher(policy: allowing(base))))
            let image = try await pipeline.image(for: ImageRequest(url: base.appendingPathComponent("images/a")))
            #expect(image.data == png)
            #expect(image.contentType == "image/png")
            #expect(origin.requests("a") == 1)
        }
    }

    /// Needs the address check: each spelling means this machine, where the origin listens.
    @Test(arguments: [
        ("127.0.0.1", SourceAddress.Kind.loopback), ("127.1", .loopback), ("2130706433", .loopback),
        ("0x7f000001", .loopback), ("0177.0.0.1", .loopback), ("[::1]", .loopback),
        ("[::ffff:127.0.0.1]", .loopback), ("0.0.0.0", .unspecified), ("localhost", .loopback),
    ])
    func refusesEverySpellingOfThisMachine(_ host: String, _ kind: SourceAddress.Kind) async throws {
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: SourcePolicy(allowedSources: ["http://"]))
            let url = try #require(URL(string: "http://\(host):\(base.port!)/images/a"))
            let error = await failure { try await fetcher.fetch(ImageRequest(url: url)) }
            guard case let .addressNotAllowed(_, _, refused)? = error as? ImageService.Error else {
                Issue.record("\(host): \(String(describing: error))")
                return
            }
            #expect(refused == kind)
            #expect(origin.requests("a") == 0)
        }
    }

    /// Needs the user-information check: the prefix matches the URL as written, and loopback is
    /// allowed here, so only that check stands between the prefix and 127.0.0.1.
    @Test func refusesAHostDisguisedByUserInformation() async throws {
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: SourcePolicy(allowedSources: ["http://allowed.example"], allowsLoopback: true))
            let url = try #require(URL(string: "http://allowed.example@127.0.0.1:\(base.port!)/images/a"))
            #expect(!fetcher.canFetch(url))
            let error = await failure { try await fetcher.fetch(ImageRequest(url: url)) }
            guard case .invalidSourceURL? = error as? ImageService.Error else {
                Issue.record("\(String(describing: error))")
                return
            }
            #expect(origin.requests("a") == 0)
        }
    }

    /// Needs the address check after resolution: the prefix allows `localhost`, which the
    /// system resolves to loopback.
    @Test func refusesAnAllowedNameThatResolvesToLoopback() async throws {
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: SourcePolicy(allowedSources: ["http://localhost:\(base.port!)/"]))
            let url = try #require(URL(string: "http://localhost:\(base.port!)/images/a"))
            #expect(fetcher.canFetch(url))
            let error = await failure { try await fetcher.fetch(ImageRequest(url: url)) }
            #expect(error as? ImageService.Error == .addressNotAllowed(host: "localhost", address: "127.0.0.1", kind: .loopback)
                || error as? ImageService.Error == .addressNotAllowed(host: "localhost", address: "::1", kind: .loopback))
            #expect(origin.requests("a") == 0)
        }
    }

    /// The pin: `source.test` is a name only this test's resolver knows (`.test` is reserved),
    /// so the fetch reaches the origin only if the client connects to the address the check
    /// resolved, without a lookup of its own.
    @Test func connectsToTheAddressItChecked() async throws {
        try await origin.run { base in
            let fetcher = SourceFetcher(
                policy: SourcePolicy(allowedSources: ["http://source.test:\(base.port!)/"], allowsLoopback: true, timeout: .seconds(60)),
                resolve: { host in host == "source.test" ? [SourceAddress("127.0.0.1")!] : [] }
            )
            let image = try await fetcher.fetch(ImageRequest(url: URL(string: "http://source.test:\(base.port!)/images/a")!))
            #expect(image.data == png)
            #expect(origin.requests("a") == 1)
        }
    }

    /// The same resolver saying a private address: refused before any connection.
    @Test func refusesANameThatResolvesToAPrivateAddress() async throws {
        let fetcher = SourceFetcher(
            policy: SourcePolicy(allowedSources: ["http://internal.test/"]),
            resolve: { _ in [SourceAddress("93.184.216.34")!, SourceAddress("10.1.2.3")!] }
        )
        let error = await failure { try await fetcher.fetch(ImageRequest(url: URL(string: "http://internal.test/a.png")!)) }
        #expect(error as? ImageService.Error == .addressNotAllowed(host: "internal.test", address: "10.1.2.3", kind: .private))
    }

    @Test func followsAnAllowedRedirect() async throws {
        origin.set("moved", .redirect(to: "/images/a", status: 301))
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: allowing(base))
            let image = try await fetcher.fetch(ImageRequest(url: base.appendingPathComponent("images/moved")))
            #expect(image.data == png)
            #expect(origin.requests("moved") == 1 && origin.requests("a") == 1)
        }
    }

    /// Needs the redirect's prefix check: the target is on the same origin and serves an image,
    /// but only `/images/r` is allowed.
    @Test func refusesARedirectToAPrefixNotAllowed() async throws {
        origin.set("r", .redirect(to: "/images/a"))
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: allowing(base) { $0.allowedSources = ["\(base.absoluteString)/images/r"] })
            let error = await failure { try await fetcher.fetch(ImageRequest(url: base.appendingPathComponent("images/r"))) }
            #expect(error as? ImageService.Error == .redirectNotAllowed(
                from: "\(base.absoluteString)/images/r", to: "\(base.absoluteString)/images/a"))
            #expect(origin.requests("a") == 0)
        }
    }

    /// Needs the redirect's address check: every prefix is allowed, the target is the cloud
    /// metadata address.
    @Test func refusesARedirectToALinkLocalAddress() async throws {
        origin.set("r", .redirect(to: "http://169.254.169.254/latest/meta-data/"))
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: SourcePolicy(allowedSources: [], allowsLoopback: true, timeout: .seconds(60)))
            let error = await failure { try await fetcher.fetch(ImageRequest(url: base.appendingPathComponent("images/r"))) }
            #expect(error as? ImageService.Error == .addressNotAllowed(host: "169.254.169.254", address: "169.254.169.254", kind: .linkLocal))
        }
    }

    /// Needs the redirect limit: four redirects end at an image; three are allowed.
    @Test func refusesARedirectChainLongerThanTheLimit() async throws {
        for hop in 1...3 { origin.set("r\(hop)", .redirect(to: "/images/r\(hop + 1)")) }
        origin.set("r4", .redirect(to: "/images/a"))
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: allowing(base) { $0.maxRedirects = 3 })
            let error = await failure { try await fetcher.fetch(ImageRequest(url: base.appendingPathComponent("images/r1"))) }
            #expect(error as? ImageService.Error == .tooManyRedirects(source: "\(base.absoluteString)/images/r1", limit: 3), "\(String(describing: error))")
            #expect(origin.requests("r4") == 1 && origin.requests("a") == 0)  // its answer was the fourth
            // Three are followed.
            let image = try await fetcher.fetch(ImageRequest(url: base.appendingPathComponent("images/r2")))
            #expect(image.data == png)
        }
    }

    @Test func refusesABodyOverTheLimitThatDeclaresItsLength() async throws {
        origin.set("big", .image(png + [UInt8](repeating: 0, count: 2_000)))
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: allowing(base) { $0.maxSourceBytes = 1_000 })
            let url = base.appendingPathComponent("images/big")
            let error = await failure { try await fetcher.fetch(ImageRequest(url: url)) }
            #expect(error as? ImagePipeline.Error == .bodyTooLarge(limit: 1_000, url: url.absoluteString))
        }
    }

    @Test func stopsABodyOverTheLimitThatDoesNotDeclareIt() async throws {
        origin.set("endless", .stream(chunk: 64 * 1024, chunks: 16 * 1024))  // 1 GiB, if nobody stops it
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: allowing(base) { $0.maxSourceBytes = 100_000 })
            let url = base.appendingPathComponent("images/endless")
            let error = await failure { try await fetcher.fetch(ImageRequest(url: url)) }
            #expect(error as? ImagePipeline.Error == .bodyTooLarge(limit: 100_000, url: url.absoluteString))
            let streamed = await origin.nextStreamEnd() ?? .max
            #expect(streamed < 64 * 1024 * 16 * 1024)
        }
    }

    @Test func stopsASlowSourceAtTheTimeLimit() async throws {
        let gate = Gate()
        origin.set("slow", .held(gate, png))
        try await origin.run { base in
            defer { gate.open() }
            let fetcher = SourceFetcher(policy: allowing(base) { $0.timeout = .milliseconds(300) })
            let url = base.appendingPathComponent("images/slow")
            let error = await failure { try await fetcher.fetch(ImageRequest(url: url)) }
            guard case let .timeout(_, seconds)? = error as? ImagePipeline.Error else {
                Issue.record("\(String(describing: error))")
                return
            }
            #expect(seconds <= 0.3)  // the policy's limit, not the client's default
        }
    }

    /// The time limit covers the host's lookup too: a resolver that never answers.
    @Test func stopsALookupThatDoesNotAnswerAtTheTimeLimit() async throws {
        let gate = Gate()
        defer { gate.open() }
        let fetcher = SourceFetcher(
            policy: SourcePolicy(allowedSources: ["http://slow-dns.test/"], timeout: .milliseconds(300)),
            resolve: { _ in
                try await gate.pass()
                return [SourceAddress("93.184.216.34")!]
            }
        )
        let url = try #require(URL(string: "http://slow-dns.test/a.png"))
        let error = await failure { try await fetcher.fetch(ImageRequest(url: url)) }
        #expect(error as? ImagePipeline.Error == .timeout(url: url.absoluteString, seconds: 0.3))
    }

    @Test func aMissingSourceIsNotFound() async throws {
        try await origin.run { base in
            let fetcher = SourceFetcher(policy: allowing(base))
            let url = base.appendingPathComponent("images/none")
            let error = await failure { try await fetcher.fetch(ImageRequest(url: url)) }
            #expect(error as? ImagePipeline.Error == .httpStatus(404, url: url.absoluteString))
        }
    }

    @Test func revalidatesThroughThePipeline() async throws {
        origin.setCacheControl("max-age=0")
        try await origin.run { base in
            let pipeline = ImagePipeline(configuration: .init(fetcher: SourceFetcher(policy: allowing(base))))
            let request = ImageRequest(url: base.appendingPathComponent("images/a"))
            _ = try await pipeline.image(for: request)
            let again = try await pipeline.response(for: request)
            #expect(again.image.data == png)
            #expect(again.isRevalidated)
            #expect(origin.requests("a") == 2 && origin.notModified("a") == 1)
        }
    }

    /// A server gets the typed refusal back from the pipeline, and the pipeline refuses a URL
    /// the policy does not take before fetching anything.
    @Test func thePipelinePassesRefusalsThrough() async throws {
        try await origin.run { base in
            let policy = SourcePolicy(allowedSources: ["http://localhost:\(base.port!)/"])
            let pipeline = ImagePipeline(configuration: .init(fetcher: SourceFetcher(policy: policy)))
            let error = await failure { try await pipeline.image(for: ImageRequest(url: URL(string: "http://localhost:\(base.port!)/images/a")!)) }
            guard case .addressNotAllowed(host: "localhost", _, kind: .loopback)? = error as? ImageService.Error else {
                Issue.record("\(String(describing: error))")
                return
            }
            let refused = await failure { try await pipeline.image(for: ImageRequest(url: base.appendingPathComponent("images/a"))) }
            #expect(refused as? ImagePipeline.Error == .invalidURL("\(base.absoluteString)/images/a"))
            #expect(origin.requests("a") == 0)
        }
    }
}

/// A real 2×2 PNG (red), as an origin serves it.
let png: [UInt8] = [
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x02,
    0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xFD, 0xD4, 0x9A, 0x73, 0x00, 0x00, 0x00, 0x10, 0x49, 0x44, 0x41,
    0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0x00, 0x44, 0x0C, 0x10, 0x0A, 0x00, 0x1F, 0xEE, 0x03, 0xFD, 0x8B, 0x5F, 0x14,
    0xD4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
]
