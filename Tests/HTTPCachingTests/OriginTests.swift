import Foundation
import HTTPCaching
import Testing

@Suite struct OriginTests {
    @Test func anOriginIsWrittenAsABrowserReadsIt() {
        #expect(URL.origin(host: "127.0.0.1", port: 8080) == "http://127.0.0.1:8080")
        #expect(URL.origin(scheme: "https", host: "example.com", port: nil) == "https://example.com")
        // An IPv6 address, as `--host ::1` gives it, goes in brackets, once.
        #expect(URL.origin(host: "::1", port: 8080) == "http://[::1]:8080")
        #expect(URL.origin(host: "[::1]", port: 8080) == "http://[::1]:8080")
        let url = URL(string: URL.origin(host: "::1", port: 8080) + "/")
        #expect(url?.port == 8080, "a URL Foundation reads back")
    }

    @Test func theOriginKeyAlwaysNamesThePort() {
        #expect(URL(string: "http://example.com/a")?.originKey == "http://example.com:80")
        #expect(URL(string: "https://example.com/a")?.originKey == "https://example.com:443")
        #expect(URL(string: "http://127.0.0.1:9/a")?.originKey == "http://127.0.0.1:9")
        // An IPv6 host in brackets, as everywhere an origin is written: one key, one form.
        #expect(URL(string: "http://[::1]:8080/a")?.originKey == "http://[::1]:8080")
        #expect(URL(string: "http://[::1]/a")?.originKey == "http://[::1]:80")
    }
}
