import Crypto
import Foundation
import MessageSignatures
import Testing

/// The signature on the gallery's answers, taken apart: every malformed or hostile input is
/// refused with a reason, and a genuine signature verifies even among others.
@Suite struct MessageSignatureTests {
    let key = SigningKey()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A response's fields, by lowercase name; several lines of one field joined as HTTP does;
    /// and the nonce of the request it answers.
    struct Answer {
        var status: Int
        var fields: [String: [String]]
        var nonce = "AAAAAAAAAAAAAAAAAAAAAA"

        /// The request's fields, as the side that sent it knows them.
        func requestField(_ name: String) -> String? {
            name == FeedNonce.field ? nonce : nil
        }

        func field(_ name: String) -> String? {
            fields[name].map { $0.joined(separator: ", ") }
        }

        var input: String {
            get { field("signature-input") ?? "" }
            set { fields["signature-input"] = [newValue] }
        }
    }

    /// A feed answer (200) or its 304, signed by `key` under `label`, made at `created`.
    func answer(
        status: Int = 200, components: [MessageSignature.Component]? = nil, signer: SigningKey? = nil, label: String = MessageSignature.label,
        created: Date? = nil, lifetime: TimeInterval = 3600, nonce: String = "AAAAAAAAAAAAAAAAAAAAAA"
    ) throws -> Answer {
        let body = Data("[]".utf8)
        var fields: [String: [String]] = ["etag": ["\"feed-1\""], MessageSignature.originField: ["http://127.0.0.1:8080"]]
        if status == 200 {
            fields["content-type"] = ["application/json; charset=utf-8"]
            fields["content-digest"] = [ContentDigest.fieldValue(for: body)]
        }
        let signer = signer ?? key
        let created = created ?? now
        let signed = fields
        let signature = try MessageSignature.sign(
            status: status, field: { signed[$0]?.first }, requestField: { $0 == FeedNonce.field ? nonce : nil },
            components: components, key: signer, keyID: signer.fingerprint,
            created: created, expires: created.addingTimeInterval(lifetime), label: label
        )
        fields["signature-input"] = [signature.signatureInput]
        fields["signature"] = [signature.signature]
        return Answer(status: status, fields: fields, nonce: nonce)
    }

    /// Finds and verifies `answer`'s signature with `key` at `now`.
    func verify(_ answer: Answer, at date: Date? = nil) throws(SignatureFailure) {
        let received = try MessageSignature.received(status: answer.status, field: answer.field)
        try MessageSignature.verify(
            received, status: answer.status, field: answer.field, requestField: answer.requestField,
            key: key.privateKey.publicKey, now: date ?? now
        )
    }

    func reason(_ body: () throws(SignatureFailure) -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func aGenuineFeedAndItsSigned304Verify() throws {
        try verify(try answer())
        try verify(try answer(status: 304))
        #expect(try answer().input.hasPrefix(#"feed=("@status" "etag" "content-type" "content-digest" "emojiart-gallery-origin" "emojiart-feed-nonce";req);created=1800000000;expires=1800003600;keyid=""#))
        #expect(try answer(status: 304).input.hasPrefix(#"feed=("@status" "etag" "emojiart-gallery-origin" "emojiart-feed-nonce";req);created="#))
    }

    /// RFC 9421 section 2.4: the request's field is a line of the base, `"name";req: value`,
    /// rebuilt by the verifier from its own request. An answer signed for another request's
    /// nonce does not verify for this one, however genuine.
    @Test func theRequestsNonceIsSignedAndAnotherRequestsAnswerDoesNotVerify() throws {
        try verify(try answer(nonce: "BBBBBBBBBBBBBBBBBBBBBB"))
        for status in [200, 304] {
            var recorded = try answer(status: status, nonce: "BBBBBBBBBBBBBBBBBBBBBB")
            recorded.nonce = "CCCCCCCCCCCCCCCCCCCCCC"  // the next request's
            #expect(reason { () throws(SignatureFailure) in try verify(recorded) } == "bad_signature")
        }
        // A component names the request's field: the response's field of that name is not it.
        var echoed = try answer(nonce: "BBBBBBBBBBBBBBBBBBBBBB")
        echoed.fields[FeedNonce.field] = ["BBBBBBBBBBBBBBBBBBBBBB"]
        echoed.nonce = "CCCCCCCCCCCCCCCCCCCCCC"
        #expect(reason { () throws(SignatureFailure) in try verify(echoed) } == "bad_signature")
    }

    /// A signature over everything else but not the request's nonce is a gallery too old to
    /// bind its answers: refused in those words (`unbound_answer`), never accepted unbound.
    @Test(arguments: [200, 304]) func anAnswerNotBoundToItsRequestIsRefusedAsTooOld(status: Int) throws {
        let unbound = try answer(status: status, components: MessageSignature.signedComponents(forStatus: status, bound: false))
        #expect(reason { () throws(SignatureFailure) in try verify(unbound) } == "unbound_answer")
        #expect("\(SignatureFailure.unboundAnswer)".contains("too old"))
        // The old shape, before answers were bound: status and ETag (and type and digest).
        let old = try answer(status: status, components: status == 304 ? ["@status", "etag"] : ["@status", "etag", "content-type", "content-digest"])
        #expect(reason { () throws(SignatureFailure) in try verify(old) } == "unbound_answer")
    }

    @Test(arguments: [
        (200, ["@status", "content-type", MessageSignature.requestNonce]),
        (200, ["@status", "content-digest", MessageSignature.requestNonce]),
        (200, ["content-type", "content-digest", MessageSignature.requestNonce]),
        (200, ["@status", "content-type", "content-digest", MessageSignature.requestNonce]),
        (304, ["@status", MessageSignature.requestNonce]),
        (304, ["etag", MessageSignature.requestNonce]),
        (304, ["@status", "etag", MessageSignature.requestNonce]),
    ] as [(Int, [MessageSignature.Component])])
    func fewerCoveredComponentsAreRefused(status: Int, components: [MessageSignature.Component]) throws {
        let answer = try answer(status: status, components: components)
        #expect(reason { () throws(SignatureFailure) in try verify(answer) } == "missing_signature")
    }

    /// A covered list naming a component twice, or more components than are read, is refused
    /// before any field is looked up: a forged list naming one 38 KB field 4,800 times cost the
    /// app 5 s of CPU and 240 MB per answer (found by an attacker, round 4). Even signed by the
    /// gallery's own key, a repeat is refused (RFC 9421 2.5).
    @Test(arguments: [
        ["@status", "etag", "content-type", "content-digest", "etag"],
        ["@status", "content-type", "content-digest"] + (0..<14).map { "x-field-\($0)" },
    ])
    func aComponentCoveredTwiceOrTooManyIsRefusedBeforeTheBaseIsBuilt(components: [String]) throws {
        var signed = try answer()
        for name in components where signed.fields[name] == nil { signed.fields[name] = ["v"] }
        let fields = signed.fields
        let repeated = try MessageSignature.sign(
            status: 200, field: { fields[$0]?.first }, components: components.map { MessageSignature.Component($0) }, key: key, keyID: key.fingerprint,
            created: now, expires: now.addingTimeInterval(3600)
        )
        signed.fields["signature-input"] = [repeated.signatureInput]
        signed.fields["signature"] = [repeated.signature]
        // `received` reads only the two signature fields; the covered ones are read by `verify`.
        let failure = #expect(throws: SignatureFailure.self) { _ = try MessageSignature.received(status: 200, field: signed.field) }
        #expect(failure?.reason == "missing_signature")
        #expect("\(failure.map { "\($0)" } ?? "")".contains(components.count > 16 ? "more than the 16 read" : "more than once"))
    }

    @Test func aCoveredFieldChangedOnTheWayIsABadSignature() throws {
        var answer = try answer(status: 304)
        answer.fields["etag"] = ["\"feed-2\""]
        #expect(reason { () throws(SignatureFailure) in try verify(answer) } == "bad_signature")
        var status = try self.answer(status: 304)
        status.status = 200
        #expect(reason { () throws(SignatureFailure) in try verify(status) } == "missing_signature", "a 304's signature does not cover a 200's body")
    }

    @Test(arguments: ["hmac-sha256", "rsa-pss-sha512", "ecdsa-p256-sha256", "ED25519"])
    func anotherAlgIsRefused(alg: String) throws {
        var answer = try answer()
        answer.input = answer.input.replacingOccurrences(of: #"alg="ed25519""#, with: #"alg="\#(alg)""#)
        #expect(answer.input.contains(alg))
        #expect(reason { () throws(SignatureFailure) in try verify(answer) } == "missing_signature")
    }

    @Test func aProxysSignatureBeforeTheGallerysDoesNotHideIt() throws {
        let proxy = SigningKey()
        let gallery = try answer()
        let own = try answer(signer: proxy, label: "proxy")
        // On separate field lines, the proxy's first, and in one line: both are one dictionary.
        var lines = gallery
        lines.fields["signature-input"] = own.fields["signature-input"]! + gallery.fields["signature-input"]!
        lines.fields["signature"] = own.fields["signature"]! + gallery.fields["signature"]!
        try verify(lines)
        var oneLine = gallery
        oneLine.fields["signature-input"] = [own.input + ", " + gallery.input]
        oneLine.fields["signature"] = [own.field("signature")! + ", " + gallery.field("signature")!]
        try verify(oneLine)
    }

    @Test func onlyTheFeedLabelCounts() throws {
        // A genuine signature by the gallery's own key, under another label: not the feed's.
        let other = try answer(label: "other")
        #expect(reason { () throws(SignatureFailure) in try verify(other) } == "missing_signature")
        // The feed label with a proxy's signature value: the gallery's signature is not there.
        let proxy = try answer(signer: SigningKey())
        var swapped = try answer()
        swapped.fields["signature"] = proxy.fields["signature"]
        #expect(reason { () throws(SignatureFailure) in try verify(swapped) } == "bad_signature")
    }

    @Test func aSignatureMadeInTheFutureIsRefusedBeyondTheSkew() throws {
        let ahead = try answer(created: now.addingTimeInterval(120))
        #expect(reason { () throws(SignatureFailure) in try verify(ahead) } == "not_yet_valid")
        // Within the 60 s allowed for clocks that differ.
        try verify(try answer(created: now.addingTimeInterval(59)))
    }

    @Test func aLifetimeOverADayOrNegativeIsRefused() throws {
        try verify(try answer(lifetime: 86_400))
        let long = try answer(lifetime: 86_401)
        #expect(reason { () throws(SignatureFailure) in try verify(long) } == "lifetime_too_long")
        let year = try answer(lifetime: 365 * 86_400)
        #expect(reason { () throws(SignatureFailure) in try verify(year) } == "lifetime_too_long")
        let negative = try answer(lifetime: -10)
        #expect(reason { () throws(SignatureFailure) in try verify(negative) } == "lifetime_too_long")
    }

    @Test func anExpiredSignatureIsRefused() throws {
        let old = try answer(created: now.addingTimeInterval(-3_661))
        #expect(reason { () throws(SignatureFailure) in try verify(old) } == "expired")
        try verify(try answer(created: now.addingTimeInterval(-3_650)))
    }

    @Test(arguments: [#";created=[0-9]+"#, #";expires=[0-9]+"#, #";keyid="[^"]*""#, #";alg="[^"]*""#])
    func aMissingParameterIsRefused(parameter: String) throws {
        var answer = try answer()
        answer.input = answer.input.replacingOccurrences(of: parameter, with: "", options: .regularExpression)
        #expect(reason { () throws(SignatureFailure) in try verify(answer) } == "missing_signature", "\(answer.input)")
    }

    @Test func aDuplicateParameterOrLabelIsRefused() throws {
        // A second expires, a year later: structured fields keep the last, which the gallery
        // never signed.
        var parameter = try answer()
        parameter.input += ";expires=\(Int(now.timeIntervalSince1970) + 31_536_000)"
        let parameterReason = reason { () throws(SignatureFailure) in try verify(parameter) }
        #expect(parameterReason == "bad_signature" || parameterReason == "lifetime_too_long", "\(parameterReason ?? "accepted")")
        var parameterFirst = try answer()
        parameterFirst.input = parameterFirst.input.replacingOccurrences(of: ";created=", with: ";created=1;created=")
        try verify(parameterFirst)  // the later created, the signed one, is the one that counts
        parameterFirst.input = parameterFirst.input.replacingOccurrences(of: ";created=1;created=1800000000", with: ";created=1800000000;created=1")
        #expect(reason { () throws(SignatureFailure) in try verify(parameterFirst) } != nil)

        // The feed label twice: the second, another key's, replaces the first.
        let gallery = try answer()
        let other = try answer(signer: SigningKey())
        var label = gallery
        label.fields["signature-input"] = [gallery.input + ", " + other.input]
        label.fields["signature"] = [gallery.field("signature")! + ", " + other.field("signature")!]
        #expect(reason { () throws(SignatureFailure) in try verify(label) } == "bad_signature")
    }

    @Test(arguments: [
        "", "feed", "feed=(", #"feed=("@status" "emojiart-feed-nonce";req)"#, "feed=:AAAA:",
        #"feed=("@status" "etag" "@method" "emojiart-feed-nonce";req);created=1"#,
        // Parameters on a component other than `req`, `req` that is not true, or on a derived one.
        #"feed=("@status" "etag" "emojiart-gallery-origin" "emojiart-feed-nonce";req;bs);created=1;expires=2;keyid="k";alg="ed25519""#,
        #"feed=("@status" "etag" "emojiart-gallery-origin" "emojiart-feed-nonce";req=?0);created=1;expires=2;keyid="k";alg="ed25519""#,
        #"feed=("@status";req "etag" "emojiart-gallery-origin" "emojiart-feed-nonce";req);created=1;expires=2;keyid="k";alg="ed25519""#,
    ])
    func aMalformedSignatureInputIsRefused(input: String) throws {
        var answer = try answer(status: 304)
        answer.input = input
        #expect(reason { () throws(SignatureFailure) in try verify(answer) } == "missing_signature")
    }

    /// A key's `x` spelled with the unused low bits of its last character set decodes to the
    /// same key, but its thumbprint (taken over the spelling) differs: `trust` stored such a
    /// key under a fingerprint the gallery never uses, and the real feed was then refused
    /// (attacker round 4). Only the canonical spelling is a key.
    @Test func aKeySpelledAnotherWayIsNotAKey() throws {
        let jwk = key.publicJWK
        #expect(try jwk.publicKey().rawRepresentation == key.privateKey.publicKey.rawRepresentation)
        // 32 bytes: 43 characters, the last carrying 4 bits and 2 unused ones.
        let last = jwk.x.last!
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let index = alphabet.firstIndex(of: last)!
        var other = jwk
        other.x = String(jwk.x.dropLast()) + String(alphabet[index ^ 1])
        other.kid = nil
        #expect(Base64URL.decode(other.x) == nil)
        #expect(throws: SignatureFailure.self) { try other.publicKey() }
    }

    /// The app's nonces: 128 random bits, unpadded base64url, a new one each time; the gallery
    /// takes those and nothing else (no padding, no other alphabet, not shorter than 128 bits,
    /// not two of them, not absurdly long).
    @Test func aNonceIs128RandomBitsOfBase64URLAndOnlySuchIsWellFormed() {
        let nonces = (0..<100).map { _ in FeedNonce.make() }
        #expect(Set(nonces).count == 100)
        #expect(nonces.allSatisfy { $0.utf8.count == 22 && FeedNonce.isWellFormed($0) })
        for bad in [
            "", "short", String(repeating: "A", count: 21), String(repeating: "A", count: 22) + "==", "AAAAAAAAAAA+AAAAAAAAAA/A",
            "AAAAAAAAAAAAAAAAAAAAAA, BBBBBBBBBBBBBBBBBBBBBB", String(repeating: "A", count: FeedNonce.maximumLength + 1),
            "AAAAAAAAAAAAAAAAAAAAA\u{0}", "AAAAAAAAAAAAAAAAAAAAAé",
        ] {
            #expect(!FeedNonce.isWellFormed(bad), "\(bad.debugDescription)")
        }
        #expect(FeedNonce.isWellFormed(String(repeating: "-_", count: 11)))
        #expect(FeedNonce.isWellFormed(String(repeating: "z", count: FeedNonce.maximumLength)))
    }

    @Test func noSignatureAtAll() throws {
        var answer = try answer(status: 304)
        answer.fields["signature-input"] = nil
        answer.fields["signature"] = nil
        #expect(reason { () throws(SignatureFailure) in try verify(answer) } == "missing_signature")
    }
}
