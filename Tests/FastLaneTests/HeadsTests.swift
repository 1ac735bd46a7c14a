@testable import FastLane
import HTTPTypes
import NIOCore
import Testing

/// A representation's prepared heads, as the app's image answers and the gallery's images use
/// them: a 200 with the body, a 304 without one, each from its own kept head.
@Suite struct HeadsTests {
    static let heads = FastLane.Heads(
        ok: [.eTag: "\"e\"", .contentType: "image/png", .contentLength: "3"],
        notModified: [.eTag: "\"e\""]
    )

    @Test func aFreshCopyIsAnswered200WithTheBody() {
        let answer = Self.heads.answer(body: ByteBuffer(string: "abc"), notModified: false)
        #expect(answer.status == .ok)
        #expect(answer.headerFields == [.eTag: "\"e\"", .contentType: "image/png", .contentLength: "3"])
        #expect(String(buffer: answer.body) == "abc")
        #expect(answer.head === Self.heads.ok, "the head made once, not one of its own")
    }

    @Test func aCurrentCopyIsAnswered304WithoutABody() {
        let answer = Self.heads.answer(body: ByteBuffer(string: "abc"), notModified: true)
        #expect(answer.status == .notModified)
        #expect(answer.headerFields == [.eTag: "\"e\""])
        #expect(answer.body.readableBytes == 0)
        #expect(answer.head === Self.heads.notModified)
    }
}
