import Foundation
import Testing
@testable import ImageService

/// URLs made by an imgproxy URL builder this project did not write (PyPI `imgproxy`), committed
/// in Fixtures/imgproxy-urls.json by Fixtures/make-imgproxy-urls.py.
@Suite struct ImgproxyBuilderTests {
    struct Fixture: Decodable {
        struct Case: Decodable, Sendable {
            let url: String
            let source: String
            let resizing_type: String
            let width: Int
            let height: Int
            let gravity: String
            let enlarge: Bool
            let `extension`: String
            let advanced: [String]
        }
        let key: String
        let salt: String
        let host: String
        let cases: [Case]
    }

    static let fixture: Fixture = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/imgproxy-urls.json")
        return try! JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
    }()

    let signer: Signer
    let decoder: RequestDecoder

    init() throws {
        signer = try Signer(keyHex: Self.fixture.key, saltHex: Self.fixture.salt)
        decoder = try RequestDecoder(configuration: .init(signing: .required(signer)))
    }

    @Test func theFixtureHasCases() {
        #expect(Self.fixture.cases.count == 40)
    }

    @Test(arguments: fixture.cases)
    func decodesAndVerifiesTheBuildersURLs(_ item: Fixture.Case) throws {
        #expect(item.url.hasPrefix(Self.fixture.host + "/"))
        let path = String(item.url.dropFirst(Self.fixture.host.count))
        let plan = try decoder.plan(forPath: path)

        #expect(plan.source == item.source)
        #expect(plan.resizingType.rawValue == item.resizing_type)
        #expect(plan.width == item.width)
        #expect(plan.height == item.height)
        #expect(plan.enlarge == item.enlarge)
        let gravity = item.gravity.split(separator: ":", omittingEmptySubsequences: false)
        #expect(plan.gravity.kind.rawValue == gravity[0])
        if gravity.count == 3 {
            #expect(plan.gravity.x == Double(gravity[1]) && plan.gravity.y == Double(gravity[2]))
        }
        if !item.extension.isEmpty {
            #expect(plan.format == ProcessingPlan.Format(extension: item.extension))
        }

        // The same options over a plain source decode to the same plan.
        let options = item.advanced + ["g:" + item.gravity, "rs:\(item.resizing_type):\(item.width):\(item.height):\(item.enlarge ? 1 : 0)"]
        var plain = "/" + options.joined(separator: "/") + "/plain/" + PercentEncoding.encode(item.source)
        if !item.extension.isEmpty { plain += "@" + item.extension }
        #expect(try decoder.plan(forPath: signer.sign(plain)) == plan)

        // Our signer signs the builder's path to the same URL, byte for byte.
        let afterSignature = path.drop { $0 == "/" }.drop { $0 != "/" }
        #expect(signer.sign(String(afterSignature)) == path)

        // And one changed byte anywhere after the signature is refused.
        let tampered = path.replacingOccurrences("rs:", "rs:f")
        #expect(throws: ImageService.Error.signatureMismatch) { try decoder.plan(forPath: tampered) }
    }

    @Test func aDifferentKeyRefusesEveryURL() throws {
        let other = try RequestDecoder(configuration: .init(signing: .required(Signer(keyHex: "00" + Self.fixture.key.dropFirst(2), saltHex: Self.fixture.salt))))
        for item in Self.fixture.cases {
            #expect(throws: ImageService.Error.signatureMismatch) {
                try other.plan(forPath: String(item.url.dropFirst(Self.fixture.host.count)))
            }
        }
    }
}
