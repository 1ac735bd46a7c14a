import AsyncHTTPClient
@testable import EmojiArtApp
import Foundation
import HTTPCaching
import NIOCore
import NIOHTTP1
import Testing
import TestSupport

/// Pages, JSON, scripts and styles go out gzip-compressed to a client that accepts it, with
/// `Vary: Accept-Encoding` and a weak ETag that revalidates either representation; images and event streams never
/// (a real app server, the lane on, and gzip itself to read the bytes back). One server at a time:
/// each verifies the whole feed before it answers, and a dozen at once starve the other suites.
@Suite(.serialized) struct TextCompressionTests {
    struct Answer {
        let status: Int
        let fields: [String: String]
        let body: [UInt8]
    }

    /// A client that asks for no encoding of its own and decodes none: what it sends is what
    /// each test says (HTTPClient.shared asks for deflate and gzip).
    static let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(decompression: .disabled)
    )

    static func get(_ port: Int, _ path: String, method: HTTPMethod = .GET, fields: [String: String] = [:]) async throws -> Answer {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        for (name, value) in fields { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = method == .HEAD ? ByteBuffer() : try await response.body.collect(upTo: 10 << 20)
        var answer: [String: String] = [:]
        for field in response.headers { answer[field.name.lowercased(), default: ""] += answer[field.name.lowercased()] == nil ? field.value : ", " + field.value }
        return Answer(status: Int(response.status.code), fields: answer, body: Array(body.readableBytesView))
    }

    /// `bytes` through `gzip -dc`.
    static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("gz-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: input) }
        try Data(bytes).write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-dc", input.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw RawHTTPError("gzip -dc failed: the body is not gzip") }
        return Array(data)
    }

    /// The app as `emojiart app` builds it: compressed unless `--no-compression` turned it off.
    @Test(arguments: [true, false])
    func theBuiltAppCompressesTextUnlessToldNotTo(compression: Bool) async throws {
        try await withGallery { galleryURL, pipeline in
            let configuration = AppConfiguration(port: 0, galleryURL: galleryURL, trust: testGalleryTrust, compression: compression)
            try await withLiveServer({ running in
                try await EmojiArtApp.buildApplication(configuration, pipeline: pipeline, onServerRunning: running)
            }) { port in
                let script = try await Self.get(port, "/assets/app.js", fields: ["Accept-Encoding": "gzip"])
                #expect(script.status == 200)
                #expect(script.fields["content-encoding"] == (compression ? "gzip" : nil), "compression \(compression)")
                #expect(compression || String(decoding: script.body, as: UTF8.self).contains("EventSource"), "the script as it is")
            }
        }
    }

    @Test(arguments: [true, false])
    func textIsCompressedForAClientThatAcceptsItAndIdenticalWhenUnpacked(fastLane: Bool) async throws {
        try await withVerifiedApp(fastLane: fastLane) { port, _, _ in
            for path in ["/assets/app.css", "/assets/app.js", "/stats"] {
                let plain = try await Self.get(port, path)
                let packed = try await Self.get(port, path, fields: ["Accept-Encoding": "gzip, deflate, br"])
                #expect(plain.fields["content-encoding"] == nil, "\(path)")
                #expect(packed.fields["content-encoding"] == "gzip", "\(path)")
                #expect(plain.fields["vary"]?.contains("Accept-Encoding") == true && packed.fields["vary"]?.contains("Accept-Encoding") == true)
                let unpacked = try Self.gunzip(packed.body)
                if path.hasPrefix("/assets") {
                    #expect(unpacked == plain.body, "\(path): the same bytes once unpacked")
                } else {
                    #expect(unpacked.first == UInt8(ascii: "{"), "\(path): JSON once unpacked")
                }
            }
            // The catalog page: much smaller on the wire.
            let page = try await Self.get(port, "/", fields: ["Accept-Encoding": "gzip"])
            #expect(page.fields["content-encoding"] == "gzip")
            let html = try Self.gunzip(page.body)
            #expect(String(decoding: html.prefix(15), as: UTF8.self).lowercased().hasPrefix("<!doctype html"))
            #expect(page.body.count * 4 < html.count, "\(page.body.count) bytes on the wire for \(html.count)")
        }
    }

    /// A request that cannot be parsed (no request line, an 80 KB URL, an 80 KB field) gets
    /// Hummingbird's 400 and the connection closes, the requests before it on the connection
    /// answered first; the compressor, which pairs each answer with a request it saw, no longer
    /// brings the process down (it did, for any such request, before any `Host` check).
    @Test(arguments: [true, false])
    func aRequestThatCannotBeParsedIsAnswered400AndTheAppGoesOn(fastLane: Bool) async throws {
        try await withVerifiedApp(fastLane: fastLane) { port, _, _ in
            let malformed = [
                "GARBAGE\n\n",
                "GET /?\(String(repeating: "a", count: 100_000)) HTTP/1.1\nHost: 127.0.0.1\n\n",
                "GET /health HTTP/1.1\nHost: 127.0.0.1\nAccept-Encoding: gzip\nX-A: \(String(repeating: "a", count: 90_000))\n\n",
            ]
            for text in malformed {
                let (answer, rest) = try await RawHTTPConnection.with(port: port) { connection in
                    try await connection.send(text)
                    return (try await connection.response(), try await connection.closed())
                }
                #expect(answer?.status == 400 && rest.isEmpty, "\(text.prefix(20))")
            }
            let (first, second) = try await RawHTTPConnection.with(port: port) { connection in
                try await connection.send("GET /assets/app.css HTTP/1.1\nHost: 127.0.0.1\n\nGARBAGE\n\n")
                return (try await connection.response(), try await connection.response())
            }
            #expect(first?.status == 200 && first?.body.isEmpty == false, "the request before it: answered first")
            #expect(second?.status == 400)
            let after = try await Self.get(port, "/assets/app.css", fields: ["Accept-Encoding": "gzip"])
            #expect(after.status == 200 && after.fields["content-encoding"] == "gzip", "still up, still compressing")
        }
    }

    /// Each `Accept-Encoding` against one server: gzip preferred, deflate when gzip is refused,
    /// nothing for a coding the server does not make.
    static let codings: [(accepted: String, coding: String?)] = [
        ("gzip, deflate, br, zstd", "gzip"), ("deflate, gzip", "gzip"), ("deflate", "deflate"), ("gzip;q=0, deflate", "deflate"),
        ("br", nil), ("identity", nil), ("gzip;q=0", nil),
        // `*` stands for gzip only where gzip is not named (RFC 9110 12.5.3).
        ("*", "gzip"), ("gzip;q=0, *", nil), ("*;q=0, deflate", "deflate"), ("br, *;q=0.1", "gzip"), ("gzip;q=0, deflate, *", "deflate"),
        // Names in any case, spaces around `;`: what the compressor would not read as written.
        ("Gzip", "gzip"), ("gzip ; q=0.5", "gzip"), ("DEFLATE", "deflate"), ("gzip; q=0, deflate; q=1", "deflate"),
    ]

    /// The same choices, and weights as RFC 9110 writes them (``WeightedPreferences``), without
    /// a server: a `q` that is not a q-value refuses its coding.
    @Test func theCodingIsChosenFromAcceptEncodingsWeights() {
        let weights: [(accepted: String, coding: String?)] = [
            ("gzip;q=0.001", "gzip"), ("x-gzip", "gzip"), ("gzip;q=2, deflate", "deflate"), ("gzip;q=0.0001", nil),
            ("deflate;q=1.5", nil), ("*;q=.5", nil), ("gzip;q=0, gzip;q=0.5", "gzip"), ("", nil),
            ("br," + String(repeating: " ", count: 2048) + "gzip", nil),  // over 2 KiB: not read
        ]
        for (accepted, coding) in Self.codings + weights {
            #expect(AcceptEncodingForCompressor.coding(accepting: accepted) == coding, "\(accepted)")
        }
    }

    @Test func theCodingFollowsAcceptEncodingPreferringGzipAndOneWeakETagRevalidatesBoth() async throws {
        try await withVerifiedApp { port, _, _ in
            for (accepted, coding) in Self.codings {
                let answer = try await Self.get(port, "/assets/app.js", fields: ["Accept-Encoding": accepted])
                #expect(answer.status == 200 && answer.fields["content-encoding"] == coding, "\(accepted)")
            }

            // The identity and the gzip representation share one weak tag, and the 304 that
            // revalidates either sends that tag and the 200's Vary (RFC 9110 15.4.5).
            let plain = try await Self.get(port, "/assets/app.css")
            let packed = try await Self.get(port, "/assets/app.css", fields: ["Accept-Encoding": "gzip"])
            #expect(packed.fields["content-encoding"] == "gzip")
            let etag = try #require(plain.fields["etag"])
            #expect(etag.hasPrefix("W/\""), "equivalent representations: a weak tag")
            #expect(packed.fields["etag"] == etag)
            #expect(plain.fields["vary"] == "Accept-Encoding" && packed.fields["vary"] == "Accept-Encoding", "named once")
            for fields in [["Accept-Encoding": "gzip"], [:]] {
                for sent in [etag, String(etag.dropFirst(2))] {
                    let again = try await Self.get(port, "/assets/app.css", fields: fields.merging(["If-None-Match": sent]) { $1 })
                    #expect(again.status == 304 && again.body.isEmpty, "\(fields) \(sent)")
                    #expect(again.fields["etag"] == etag && again.fields["vary"] == "Accept-Encoding", "\(fields) \(sent)")
                }
            }
        }
    }

    @Test(arguments: [true, false])
    func imagesAndEventStreamsAndHeadAreNeverCompressed(fastLane: Bool) async throws {
        try await withVerifiedApp(fastLane: fastLane) { port, _, _ in
            // A thumbnail twice: the route's miss, then the lane's hit.
            for _ in 0..<2 {
                let image = try await Self.get(port, "/thumbs/5", fields: ["Accept-Encoding": "gzip"])
                #expect(image.status == 200 && image.fields["content-encoding"] == nil)
                #expect(image.body.starts(with: [0x89, 0x50, 0x4E, 0x47]), "the PNG itself")
            }
            // HEAD of a page says no Content-Encoding and leaves the connection fit for the next request.
            let head = try await Self.get(port, "/", method: .HEAD, fields: ["Accept-Encoding": "gzip"])
            #expect(head.status == 200 && head.fields["content-encoding"] == nil)
            let after = try await Self.get(port, "/assets/app.css", fields: ["Accept-Encoding": "gzip"])
            #expect(after.status == 200 && after.fields["content-encoding"] == "gzip")
            // The event stream's first event arrives uncompressed.
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/events")
            request.headers.add(name: "Accept-Encoding", value: "gzip")
            let response = try await Self.client.execute(request, timeout: .seconds(30))
            #expect(response.headers.first(name: "content-encoding") == nil)
            var body = response.body.makeAsyncIterator()
            let first = try #require(try await body.next())
            let text = String(buffer: first)
            #expect(text.hasPrefix("retry: ") || text.hasPrefix("event: "), "plain text, as it happens: \(text.prefix(40))")
        }
    }
}
