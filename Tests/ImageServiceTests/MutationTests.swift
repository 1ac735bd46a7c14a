import Testing
@testable import ImageService

/// Paths mutated one character at a time: the decoder never traps, and whatever it accepts has a
/// canonical path that decodes back to the same plan.
@Suite struct MutationTests {
    static let seeds = [
        "/_/rs:fill:300:400:1:1:so:3:4/g:fp:0.5:0.25/c:0.5:100:we/q:80/dpr:1.5/bg:ff8800/fn:w6TDtsOcLnBuZw:1/plain/http://example.com/a%20b.jpg@png",
        "/_/pr:thumb/bl:2/sh:0.5/rot:90/ar:1/sm:1/cb:v2/exp:4102444800/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.webp",
    ]
    static let replacements: [String] = ["", "/", ":", "%", "@", ".", "=", "-", "0", "9", "a", "\u{0}", "é", "//", "::"]

    @Test(arguments: seeds)
    func everyOneCharacterMutation(_ seed: String) throws {
        let characters = Array(seed)
        var accepted = 0, refused = 0
        for index in characters.indices {
            for replacement in Self.replacements {
                let mutated = String(characters[..<index]) + replacement + String(characters[(index + 1)...])
                do {
                    let plan = try unsigned.plan(forPath: mutated)
                    let again = try unsigned.plan(forPath: "/_" + plan.canonicalPath)
                    #expect(again == plan, "\(mutated)")
                    accepted += 1
                } catch {
                    #expect(!error.description.isEmpty)
                    refused += 1
                }
            }
        }
        // Both outcomes happen: the mutations reach past the first check.
        #expect(accepted > 100 && refused > 100)
    }
}
