import Testing
@testable import ImageService

/// The key and salt of imgproxy's signing guide; the expected signatures were computed with
/// Python's `hmac` (an implementation this project did not write).
let guideKey = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
let guideSalt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"

@Suite struct SignerTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let path: String
        let size: Int
        let signature: String
        var testDescription: String { "\(size) bytes of \(path)" }
    }

    static let base64Path = "/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png"
    static let plainPath = "/preset:sharp/resize:fill:300:400:0/gravity:sm/plain/http://example.com/images/curiosity.jpg@png"

    static let vectors: [Vector] = [
        Vector(path: base64Path, size: 32, signature: "90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf40"),
        Vector(path: base64Path, size: 8, signature: "90UxdwGRAI0"),
        Vector(path: base64Path, size: 1, signature: "9w"),
        Vector(path: plainPath, size: 32, signature: "-Iz7yfQw4JxZ_XIymLdeRMWW7nDADQzJIMCnIMi2d4k"),
        Vector(path: plainPath, size: 8, signature: "-Iz7yfQw4Jw"),
        Vector(path: plainPath, size: 1, signature: "-A"),
    ]

    @Test(arguments: vectors)
    func signsAsImgproxy(_ vector: Vector) throws {
        let signer = try Signer(keyHex: guideKey, saltHex: guideSalt, signatureSize: vector.size)
        #expect(signer.signature(for: vector.path) == vector.signature)
        #expect(signer.sign(vector.path) == "/" + vector.signature + vector.path)
        try signer.check(signature: vector.signature, pathAfterSignature: vector.path)
    }

    @Test func emptySaltSignsThePathAlone() throws {
        let signer = try Signer(keyHex: "0102", saltHex: "")
        #expect(signer.signature(for: "/w:1/plain/x") == "W9B9ZVK9sn0-zfkffmIbBoDJj3zj4aZRcQzbrOT7uXU")
    }

    @Test func refusesAnotherPathsSignature() throws {
        let signer = try Signer(keyHex: guideKey, saltHex: guideSalt)
        let signature = signer.signature(for: Self.plainPath)
        #expect(throws: ImageService.Error.signatureMismatch) {
            try signer.check(signature: signature, pathAfterSignature: Self.plainPath.replacingOccurrences("300", "301"))
        }
        // Each byte counts: flip the last character (its low bits are padding, so flip a whole sextet).
        var tampered = Array(signature)
        tampered[0] = tampered[0] == "A" ? "B" : "A"
        #expect(throws: ImageService.Error.signatureMismatch) {
            try signer.check(signature: String(tampered), pathAfterSignature: Self.plainPath)
        }
        let other = try Signer(keyHex: guideKey, saltHex: "00")
        #expect(throws: ImageService.Error.signatureMismatch) {
            try other.check(signature: signature, pathAfterSignature: Self.plainPath)
        }
    }

    @Test(arguments: [
        "",  // empty
        "90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf4",  // 42 characters: 31 bytes and some bits
        "90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf40A",  // 33 bytes
        "90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf40=",  // padding
        "90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf4+",  // standard, not URL-safe, base64
        "90UxdwGRAI2bpLSHKkZculJau5ahfxfS0h3fMuQAf41",  // non-zero unused bits
        "insecure",  // the Python builder's placeholder
    ])
    func refusesMalformedSignatures(_ signature: String) throws {
        let signer = try Signer(keyHex: guideKey, saltHex: guideSalt)
        #expect(throws: ImageService.Error.malformedSignature(signature, expectedBytes: 32)) {
            try signer.check(signature: signature, pathAfterSignature: Self.base64Path)
        }
    }

    @Test func refusesBadKeysSaltsAndSizes() {
        #expect(throws: ImageService.Error.invalidKey(what: "key", reason: "it is not hex")) {
            try Signer(keyHex: "xyz0", saltHex: "")
        }
        #expect(throws: ImageService.Error.invalidKey(what: "key", reason: "it is not hex")) {
            try Signer(keyHex: "abc", saltHex: "")  // odd length
        }
        #expect(throws: ImageService.Error.invalidKey(what: "key", reason: "it is empty")) {
            try Signer(keyHex: "", saltHex: "00")
        }
        #expect(throws: ImageService.Error.invalidKey(what: "salt", reason: "it is not hex")) {
            try Signer(keyHex: "00", saltHex: "0g")
        }
        #expect(throws: ImageService.Error.invalidSignatureSize(0)) { try Signer(keyHex: "00", saltHex: "", signatureSize: 0) }
        #expect(throws: ImageService.Error.invalidSignatureSize(33)) { try Signer(keyHex: "00", saltHex: "", signatureSize: 33) }
    }
}

extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
