import Testing
@testable import ImageService

@Suite struct RequestDecoderTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let path: String
        let source: String
        let format: ProcessingPlan.Format?
        var testDescription: String { path }
    }

    /// The source URL forms of imgproxy's "Generating the URL" guide.
    static let sources: [Case] = [
        Case(path: "/_/w:1/plain/http://example.com/images/curiosity.jpg", source: "http://example.com/images/curiosity.jpg", format: nil),
        Case(path: "/_/w:1/plain/http://example.com/images/curiosity.jpg@png", source: "http://example.com/images/curiosity.jpg", format: .png),
        Case(path: "/_/w:1/plain/http%3A%2F%2Fexample.com%2Fa%20b.jpg%3Fx%3D1%40@webp", source: "http://example.com/a b.jpg?x=1@", format: .webp),
        Case(path: "/_/w:1/plain/https://example.com/%C3%BC+%F0%9F%8E%A8.png", source: "https://example.com/ü+🎨.png", format: nil),
        Case(path: "/_/w:1/aHR0cDovL2V4YW1wbGUuY29tL2ltYWdlcy9jdXJpb3NpdHkuanBn", source: "http://example.com/images/curiosity.jpg", format: nil),
        Case(path: "/_/w:1/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png", source: "http://example.com/images/curiosity.jpg", format: .png),
        Case(path: "/_/w:1/aHR0cDovL2V4YW1wbGUuY29tL2EucG5n.jpeg", source: "http://example.com/a.png", format: .jpeg),
        Case(path: "/_/w:1/aHR0cDovL2V4YW1wbGUuY29tL2EucG4=.gif", source: "http://example.com/a.pn", format: .gif),  // padding tolerated
        Case(path: "/_/plain/local:///a.png@avif", source: "local:///a.png", format: .avif),  // no options at all
        Case(path: "/_/aHR0cDovL3g", source: "http://x", format: nil),
    ]

    @Test(arguments: sources)
    func decodesSources(_ item: Case) throws {
        let plan = try unsigned.plan(forPath: item.path)
        #expect(plan.source == item.source)
        #expect(plan.format == item.format)
    }

    @Test func theExtensionWinsOverTheFormatOption() throws {
        #expect(try plan("f:webp", source: "/plain/http://x/a.jpg@png").format == .png)
        #expect(try plan("f:webp", source: "/plain/http://x/a.jpg").format == .webp)
    }

    @Test func checksTheSignatureOfThePathAfterIt() throws {
        let signer = try Signer(keyHex: guideKey, saltHex: guideSalt)
        let decoder = try RequestDecoder(configuration: .init(signing: .required(signer)))
        let path = "/rs:fill:300:400:0/g:sm/plain/http://example.com/images/curiosity.jpg@png"
        let plan = try decoder.plan(forPath: signer.sign(path))
        #expect(plan.width == 300 && plan.height == 400 && plan.gravity == Gravity(.smart))
        #expect(throws: ImageService.Error.signatureMismatch) {
            try decoder.plan(forPath: signer.sign(path).replacingOccurrences("400", "401"))
        }
        #expect(throws: ImageService.Error.malformedSignature("_", expectedBytes: 32)) {
            try decoder.plan(forPath: "/_" + path)
        }
    }

    @Test func truncatedSignatures() throws {
        let signer = try Signer(keyHex: guideKey, saltHex: guideSalt, signatureSize: 8)
        let decoder = try RequestDecoder(configuration: .init(signing: .required(signer)))
        let signed = signer.sign("/w:10/plain/http://x/y.png")
        #expect(signed.split(separator: "/")[0].count == 11)
        #expect(try decoder.plan(forPath: signed).width == 10)
    }

    /// The canonical path is an imgproxy path: decoded again, it gives the same plan.
    @Test(arguments: [
        "rs:fill:300:400:1/g:fp:0.5:0.25/q:80/dpr:1.5",
        "s:10:20:t:1:so:3:4/c:0.5:100:we:1:2/bg:ff8800/bl:1.5/sh:0.25/rot:-90/ar:0/sm:t",
        "cb:v2/exp:4102444800/fn:My%20file/f:webp",
        "cb:a%2Fb%40c%25/fn:x%2Fy",
        "fn:w6TDtsOcLnBuZw:1",
        "pr:thumb",
    ])
    func canonicalPathRoundTrips(_ options: String) throws {
        let first = try plan(options, source: "/plain/https://example.com/a%20b@%3F.png@gif")
        let again = try unsigned.plan(forPath: "/_" + first.canonicalPath)
        #expect(again == first)
        #expect(again.canonicalPath == first.canonicalPath)
    }

    @Test func canonicalPathSpellsEachValueOnce() throws {
        let plan = try plan("rs:fill:300:400:1/g:fp:0.5:0.25/q:80/dpr:1.50/rot:-90/bg:255:136:0/fn:a b")
        #expect(plan.canonicalPath == "/rt:fill/w:300/h:400/dpr:1.5/el:1/ex:0:ce:0:0/g:fp:0.5:0.25/q:80/bg:ff8800/rot:270/fn:YSBi:1/plain/http%3A%2F%2Fexample.com%2Fa.jpg")
        #expect(try RequestDecoderTests.defaults().canonicalPath == "/rt:fit/w:0/h:0/dpr:1/el:0/ex:0:ce:0:0/g:ce:0:0/plain/http%3A%2F%2Fexample.com%2Fa.jpg")
    }

    static func defaults() throws -> ProcessingPlan {
        try unsigned.plan(forPath: "/_/plain/http://example.com/a.jpg")
    }

    @Test func expires() throws {
        let plan = try plan("exp:1000")
        #expect(!plan.isExpired(atUnixTime: 1000))
        #expect(plan.isExpired(atUnixTime: 1001))
        #expect(!ProcessingPlan(source: "x").isExpired(atUnixTime: .max))
    }
}
