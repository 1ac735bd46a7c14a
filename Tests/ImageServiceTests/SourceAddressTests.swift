import Foundation
import Testing
@testable import ImageService

/// The address classifier and the prefix matcher, as pure functions over tables.
@Suite struct SourceAddressTests {
    @Test(arguments: [
        // IPv4
        ("93.184.216.34", SourceAddress.Kind.public),
        ("8.8.8.8", .public),
        ("0.0.0.0", .unspecified),
        ("0.1.2.3", .unspecified),
        ("127.0.0.1", .loopback),
        ("127.255.255.254", .loopback),
        ("10.0.0.1", .private),
        ("172.16.0.1", .private),
        ("172.31.255.255", .private),
        ("172.32.0.1", .public),
        ("172.15.255.255", .public),
        ("192.168.1.1", .private),
        ("100.64.0.1", .private),
        ("100.127.255.255", .private),
        ("100.128.0.1", .public),
        ("169.254.169.254", .linkLocal),
        ("224.0.0.1", .multicast),
        ("239.255.255.250", .multicast),
        ("255.255.255.255", .broadcast),
        ("240.0.0.1", .broadcast),
        // IPv6
        ("2606:4700::1111", .public),
        ("::", .unspecified),
        ("::1", .loopback),
        ("fe80::1", .linkLocal),
        ("febf::1", .linkLocal),
        ("fec0::1", .public),
        ("fc00::1", .private),
        ("fd12:3456::1", .private),
        ("ff02::1", .multicast),
        // IPv4 inside IPv6
        ("::ffff:127.0.0.1", .loopback),
        ("::ffff:7f00:1", .loopback),
        ("::ffff:10.0.0.1", .private),
        ("::ffff:169.254.169.254", .linkLocal),
        ("::ffff:0.0.0.0", .unspecified),
        ("::ffff:8.8.8.8", .public),
        ("::127.0.0.1", .loopback),
        ("::192.168.0.1", .private),
        ("64:ff9b::127.0.0.1", .loopback),
        ("64:ff9b:1:7f00:0:1::", .loopback),
        ("2002:7f00:1::", .loopback),
        ("2002:a9fe:a9fe::1", .linkLocal),
        ("2001:0:0:0:0:0:80ff:fffe", .loopback),  // Teredo: 127.0.0.1 XOR 0xFFFFFFFF
        ("2001:db8::5efe:7f00:1", .loopback),  // ISATAP
        ("2001:db8::200:5efe:a00:1", .private),
    ])
    func classifies(_ text: String, _ kind: SourceAddress.Kind) throws {
        let address = try #require(SourceAddress(text))
        #expect(address.kind == kind)
    }

    @Test(arguments: ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "localhost", "[::1]", "::1%lo", ""])
    func readsOnlyStrictLiterals(_ text: String) {
        #expect(SourceAddress(text) == nil)
    }

    @Test func describesAddressesAsWritten() throws {
        #expect(try #require(SourceAddress("127.0.0.1")).description == "127.0.0.1")
        #expect(try #require(SourceAddress("::ffff:127.0.0.1")).bytes.suffix(4) == [127, 0, 0, 1])
        #expect(try #require(SourceAddress("0:0:0:0:0:0:0:1")).description == "::1")
    }

    @Test(arguments: [
        ("https://img.example.com/a.png", "https://img.example.com/", true),
        ("https://img.example.com.evil.net/a.png", "https://img.example.com/", false),
        ("https://img.example.com.evil.net/a.png", "https://img.example.com", true),  // imgproxy's pitfall, documented
        ("https://cdn.example.com/a.png", "https://*.example.com/", true),
        ("https://a.b.example.com/a.png", "https://*.example.com/", true),  // a star spans dots
        ("https://evil.com/.example.com/a.png", "https://*.example.com/", false),  // not slashes
        ("https://example.com/u/1/p/a.png", "https://example.com/u/*/p/", true),
        ("https://example.com/u/1/2/p/a.png", "https://example.com/u/*/p/", false),
        ("https://example.com/a.png", "*", true),
        ("https://example.com/a.png", "https://*/", true),
        ("http://example.com/a.png", "https://", false),
        ("https://example.com/a.png", "", true),
        ("https://example.com/a***b", "https://example.com/a***b", true),
    ])
    func matchesPrefixesAsImgproxy(_ url: String, _ prefix: String, _ matches: Bool) {
        #expect(SourcePolicy.matches(url, prefix: prefix) == matches)
    }

    @Test func checksTheFormBeforeThePrefix() {
        let policy = SourcePolicy(allowedSources: ["http://allowed.example"])
        #expect(throws: ImageService.Error.invalidSourceURL("http://allowed.example@127.0.0.1/ has user information before its host; give the source without it")) {
            try policy.check(URL(string: "http://allowed.example@127.0.0.1/")!)
        }
        #expect(throws: ImageService.Error.invalidSourceURL("file:///etc/passwd is not an http or https URL")) {
            try policy.check(URL(string: "file:///etc/passwd")!)
        }
        #expect(throws: ImageService.Error.sourceNotAllowed("http://other.example/a.png")) {
            try policy.check(URL(string: "http://other.example/a.png")!)
        }
        #expect(throws: Never.self) { try policy.check(URL(string: "http://allowed.example/a.png")!) }
    }

    /// A percent-escape in the host decodes to what the prefix never saw: the resolver stops at
    /// a NUL, so `127.0.0.1%00.allowed.test` matched `*.allowed.test` and resolved to 127.0.0.1
    /// (the attack round of issue 49; only AsyncHTTPClient's header check stopped it).
    @Test(arguments: ["http://127.0.0.1%00.allowed.test/a.png", "http://x.allowed.test%2eevil.example/a.png", "http://a%0a.allowed.test/a.png"])
    func aHostWithEscapesIsRefusedBeforeItIsResolved(_ source: String) throws {
        let policy = SourcePolicy(allowedSources: ["http://*.allowed.test"])
        let url = try #require(URL(string: source))
        let error = #expect(throws: ImageService.Error.self) { try policy.check(url) }
        guard case .invalidSourceURL? = error else {
            Issue.record("\(source) was not refused for its form: \(String(describing: error))")
            return
        }
    }
}
