// libFuzzer target for the image service's reading of a request path (`make fuzz`, third): the
// URL decoder (signature, option segments, plain and base64 sources, extensions) and the option
// parser with presets, built by scripts/fuzz from ImageService's decoding sources.
//
// Each input is a request path. It is decoded by a signed decoder (the signature check must
// refuse it, or the input is a signed path) and by an unsigned one with presets. A plan that
// decodes must survive its own canonical form: `canonicalPath` decodes again, to an equal plan
// with the same canonical path (two spellings of one processing are one cache entry: a plan
// whose canonical form decodes to another would make two). A trap, an out-of-bounds access or a
// broken promise (`expect`) is a crash that libFuzzer reports with its input.
import ImageService

private let unsigned = try! RequestDecoder(configuration: .init(
    signing: .unsignedAllowed, presets: ["thumb": "rs:fill:150:150/q:80", "sharp": "sh:0.7/pr:thumb"], maxDimension: 8192
))
private let signer = try! Signer(
    keyHex: "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881",
    saltHex: "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
)
private let signed = try! RequestDecoder(configuration: .init(signing: .required(signer)))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestPaths(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let path = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    // Signed: whatever the input, a forged signature never passes.
    if let plan = try? signed.plan(forPath: path) {
        // Only a path signed with the key decodes; the fuzzer cannot know the key, so the input must
        // be a signature the signer itself makes for the rest of the path.
        let afterSignature = path.drop { $0 != "/" }.dropFirst().drop { $0 != "/" }
        expect(signer.sign(String(afterSignature)) == path, "a signed decoder took a path not signed with its key: \(plan)")
    }
    // Unsigned, with presets: a plan's canonical form decodes to the same plan.
    for candidate in [path, "/_" + path, "/_/" + path] {
        guard let plan = try? unsigned.plan(forPath: candidate) else { continue }
        let canonical = plan.canonicalPath
        do {
            let again = try unsigned.plan(forPath: "/_" + canonical)
            expect(again == plan, "the canonical path \(canonical) decodes to another plan")
            expect(again.canonicalPath == canonical, "the canonical path \(canonical) is not canonical")
        } catch {
            expect(false, "the canonical path \(canonical) of \(candidate) does not decode: \(error)")
        }
    }
    return 0
}

private func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
