import Testing
@testable import ImageService

@Suite struct OptionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let options: String
        let plan: ProcessingPlan
        var testDescription: String { options }
        init(_ options: String, _ change: (inout ProcessingPlan) -> Void) {
            self.options = options
            self.plan = expected(change)
        }
    }

    static let cases: [Case] = [
        Case("rs:fill:300:400:1") { $0.resizingType = .fill; $0.width = 300; $0.height = 400; $0.enlarge = true },
        Case("resize:fill-down:300") { $0.resizingType = .fillDown; $0.width = 300 },
        Case("rs:force::200") { $0.resizingType = .force; $0.height = 200 },  // empty argument keeps the default
        Case("rs:auto:1:2:0:1:so:3:4") { $0.resizingType = .auto; $0.width = 1; $0.height = 2; $0.extend = .init(enabled: true, gravity: Gravity(.south, x: 3, y: 4)) },
        Case("s:100:50") { $0.width = 100; $0.height = 50 },
        Case("size:100:50:true:t") { $0.width = 100; $0.height = 50; $0.enlarge = true; $0.extend.enabled = true },
        Case("rt:fill") { $0.resizingType = .fill },
        Case("resizing_type:force") { $0.resizingType = .force },
        Case("w:640/h:480") { $0.width = 640; $0.height = 480 },
        Case("width:0/height:4096") { $0.height = 4096 },
        Case("w:+7") { $0.width = 7 },
        Case("dpr:2") { $0.dpr = 2 },
        Case("dpr:0.5") { $0.dpr = 0.5 },
        Case("dpr:8") { $0.dpr = 8 },
        Case("el:1") { $0.enlarge = true },
        Case("enlarge:T/el:False") { $0.enlarge = false },
        Case("ex:1") { $0.extend.enabled = true },
        Case("extend:true:nowe:10:-5") { $0.extend = .init(enabled: true, gravity: Gravity(.northWest, x: 10, y: -5)) },
        Case("g:no") { $0.gravity = Gravity(.north) },
        Case("g:so:1") { $0.gravity = Gravity(.south, x: 1) },
        Case("gravity:ea:1.5:2") { $0.gravity = Gravity(.east, x: 1.5, y: 2) },
        Case("g:we") { $0.gravity = Gravity(.west) },
        Case("g:noea") { $0.gravity = Gravity(.northEast) },
        Case("g:soea") { $0.gravity = Gravity(.southEast) },
        Case("g:sowe") { $0.gravity = Gravity(.southWest) },
        Case("g:sm") { $0.gravity = Gravity(.smart) },
        Case("g:fp:0:1") { $0.gravity = Gravity(.focusPoint, x: 0, y: 1) },
        Case("c:100:200") { $0.crop = .init(width: 100, height: 200) },
        Case("crop:0.5:0.5:sm") { $0.crop = .init(width: 0.5, height: 0.5, gravity: Gravity(.smart)) },
        Case("c:100:200/c:0:0") { _ in },  // the whole image: no crop
        Case("q:1") { $0.quality = 1 },
        Case("quality:100") { $0.quality = 100 },
        Case("f:jpg") { $0.format = .jpeg },
        Case("format:jpeg") { $0.format = .jpeg },
        Case("ext:png") { $0.format = .png },
        Case("f:webp") { $0.format = .webp },
        Case("f:avif") { $0.format = .avif },
        Case("f:gif") { $0.format = .gif },
        Case("bg:255:0:10") { $0.background = .init(red: 255, green: 0, blue: 10) },
        Case("background:FF000a") { $0.background = .init(red: 255, green: 0, blue: 10) },
        Case("bg:ffffff/bg:") { _ in },  // no arguments turns it off
        Case("bl:2") { $0.blur = 2 },
        Case("blur:0") { _ in },
        Case("sh:0.5") { $0.sharpen = 0.5 },
        Case("sharpen:10") { $0.sharpen = 10 },
        Case("rot:90") { $0.rotate = 90 },
        Case("rotate:-90") { $0.rotate = 270 },
        Case("rot:720") { _ in },
        Case("ar:1") { $0.autoRotate = true },
        Case("auto_rotate:0") { $0.autoRotate = false },
        Case("sm:1") { $0.stripMetadata = true },
        Case("strip_metadata:f") { $0.stripMetadata = false },
        Case("cb:v2") { $0.cacheBuster = "v2" },
        Case("cachebuster:2024-01") { $0.cacheBuster = "2024-01" },
        Case("cb:a%2Fb%20c%25") { $0.cacheBuster = "a/b c%" },  // a segment is percent-decoded before it is split
        Case("cb:100%") { $0.cacheBuster = "100%" },  // one that does not decode is read as written
        Case("w%3A300") { $0.width = 300 },  // an encoded ':' separates too
        Case("rs%3Afill%3A10:20") { $0.resizingType = .fill; $0.width = 10; $0.height = 20 },
        Case("exp:4102444800") { $0.expires = 4_102_444_800 },
        Case("expires:-1") { $0.expires = -1 },
        Case("fn:cat") { $0.filename = "cat" },
        Case("filename:w6TDtsOcLnBuZw:1") { $0.filename = "äöÜ.png" },
        Case("filename:w6TDtsOcLnBuZw==:t") { $0.filename = "äöÜ.png" },
        Case("pr:sharp") { $0.sharpen = 0.7; $0.quality = 90 },
        Case("preset:thumb") { $0.resizingType = .fill; $0.width = 150; $0.height = 150; $0.sharpen = 0.7; $0.quality = 90 },
        Case("pr:sharp/q:50") { $0.sharpen = 0.7; $0.quality = 50 },  // a later option overrides the preset
        Case("q:50/pr:sharp") { $0.sharpen = 0.7; $0.quality = 90 },
        Case("pr:sharp:thumb") { $0.resizingType = .fill; $0.width = 150; $0.height = 150; $0.sharpen = 0.7; $0.quality = 90 },
    ]

    @Test(arguments: cases)
    func parsesEachOption(_ item: Case) throws {
        #expect(try plan(item.options) == item.plan)
    }

    /// Two spellings of one processing: equal plans, equal canonical paths.
    @Test(arguments: [
        ("rs:fill:300:400:1", "resizing_type:fill/width:300/height:400/enlarge:true"),
        ("s:300:400", "w:300/h:400"),
        ("rs:fit:300:400:0:0", "size:300:400"),
        ("g:ce:0:0", "g:ce"),
        ("g:no:-0", "gravity:no"),
        ("dpr:1.50", "dpr:1.5"),
        ("dpr:1", ""),
        ("rot:-270", "rotate:90"),
        ("bg:255:255:255", "background:FFFFFF"),
        ("f:jpeg", "ext:jpg"),
        ("f:webp/f:png", "format:png"),
        ("q:80/sh:0.7/q:90", "pr:sharp"),
        ("bl:0", ""),
        ("fn:w6TDtsOcLnBuZw:1", "fn:äöÜ.png"),
        ("ex:1:ce", "extend:t:ce:0:0"),
        ("el:1/el:0", "el:f"),
    ])
    func spellingsOfOneProcessingAreEqual(_ one: String, _ other: String) throws {
        let left = try plan(one), right = try plan(other)
        #expect(left == right)
        #expect(left.canonicalPath == right.canonicalPath)
    }

    @Test func differentProcessingDiffers() throws {
        #expect(try plan("w:300") != plan("w:301"))
        #expect(try plan("w:300").canonicalPath != plan("h:300").canonicalPath)
        #expect(try plan("cb:1").canonicalPath != plan("cb:2").canonicalPath)
        #expect(try plan("w:1", source: "/plain/http://x/a").canonicalPath != plan("w:1", source: "/plain/http://x/b").canonicalPath)
    }

    @Test func theDefaultPresetAppliesFirst() throws {
        let decoder = try RequestDecoder(configuration: .init(signing: .unsignedAllowed, presets: ["default": "q:70/w:10"]))
        let plan = try decoder.plan(forPath: "/_/w:20/plain/http://x/a")
        #expect(plan.quality == 70)
        #expect(plan.width == 20)
    }
}
