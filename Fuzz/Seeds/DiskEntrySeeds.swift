// Writes seed entries for the disk entry fuzzer: real entries from the cache's encoder, of every
// shape (empty and non-empty payloads, with and without a pixel size, with HTTP cache headers and
// an original's digest, the feed's JSON, a known-missing 404), all for the key "k".
import Foundation
import HTTPCaching

@main
enum DiskEntrySeeds {
    static func main() throws {
        let directory = URL(fileURLWithPath: CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : ".")
        let images = [
            Image(data: [], contentType: "image/png"),
            Image(data: Array(0..<64), contentType: "image/png", pixelSize: .init(width: 111, height: 200)),
            Image(data: Array(repeating: 0xFF, count: 700), contentType: "image/webp"),
            Image(data: [1, 2, 3], contentType: "application/octet-stream", pixelSize: .init(width: 0, height: 0)),
            // An original from HTTP: validators, freshness and its digest.
            Image(
                data: Array(0..<32), contentType: "image/png",
                cacheHeaders: CacheHeaders(
                    fields: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60, stale-while-revalidate=30"), ("Age", "3"),
                             ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")],
                    requestTime: Date(timeIntervalSince1970: 1_700_000_000), responseTime: Date(timeIntervalSince1970: 1_700_000_001)
                ),
                originalSHA256: String(repeating: "ab", count: 32)
            ),
            // The feed as the app stores it: JSON entries, no-cache, validators.
            Image(
                data: Array(#"[{"name":"Grinning Face","url":"/gallery/image?1","price":12.5,"checksum":"sha256:00"},{"name":"Cat","url":"/gallery/image?2","price":1000,"checksum":"sha256:11"}]"#.utf8),
                contentType: "application/json",
                cacheHeaders: CacheHeaders(
                    fields: [("ETag", "\"feed-1\""), ("Cache-Control", "no-cache"), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
                             ("Date", "Sun, 06 Nov 1994 08:49:38 GMT")],
                    requestTime: Date(timeIntervalSince1970: 1_700_000_000), responseTime: Date(timeIntervalSince1970: 1_700_000_001)
                )
            ),
        ]
        for (index, image) in images.enumerated() {
            try Data(DiskEntry.encode(image, key: "k")).write(to: directory.appendingPathComponent("seed-\(index)"))
        }
        // A known-missing entry: a 404 the gallery gave a lifetime.
        let missing = CacheHeaders(
            fields: [("Cache-Control", "public, max-age=3600"), ("Date", "Sun, 06 Nov 1994 08:49:38 GMT")],
            requestTime: Date(timeIntervalSince1970: 1_700_000_000), responseTime: Date(timeIntervalSince1970: 1_700_000_001)
        )
        try Data(DiskEntry.encodeMissing(status: 404, cacheHeaders: missing, key: "k"))
            .write(to: directory.appendingPathComponent("seed-missing"))
    }
}
