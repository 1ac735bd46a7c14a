import Testing
@testable import ImageService

/// Every refusal, each with the input that only its check stops.
@Suite struct RefusalTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let path: String
        let error: ImageService.Error
        var testDescription: String { path }
        init(_ path: String, _ error: ImageService.Error) {
            self.path = path
            self.error = error
        }
    }

    static let paths: [Case] = [
        Case("", .malformedPath(reason: "it does not start with '/'")),
        Case("_/w:1/plain/http://x", .malformedPath(reason: "it does not start with '/'")),
        Case("/_", .malformedPath(reason: "there is nothing after the signature")),
        Case("//w:1/plain/http://x", .malformedPath(reason: "the signature is empty")),
        Case("/_/w:1", .malformedPath(reason: "there is no source URL after the options")),
        Case("/_/w:1/plain", .invalidSourceURL("it is empty")),
        Case("/_/w:1/plain/", .invalidSourceURL("it is empty")),
        Case("/_/w:1/plain/@png", .invalidSourceURL("it is empty")),
        Case("/_/w:1/.png", .invalidSourceURL("it is empty")),
        Case("/_/w:1/aHR0cDovL3g/", .malformedPath(reason: "the base64 source has an empty segment")),
        Case("/_/w:1//aHR0cDovL3g", .malformedPath(reason: "the base64 source has an empty segment")),
        Case("/_/w:1/plain/http://x/a.png@", .malformedPath(reason: "the extension after the source is empty")),
        Case("/_/w:1/aHR0cDovL3g.", .malformedPath(reason: "the extension after the source is empty")),
        Case("/_/w:1/plain/http://x/%zz.png", .invalidPercentEncoding("http://x/%zz.png")),
        Case("/_/w:1/plain/http://x/a%2", .invalidPercentEncoding("http://x/a%2")),
        Case("/_/w:1/plain/http://x/a%", .invalidPercentEncoding("http://x/a%")),
        Case("/_/w:1/plain/http://x/%FF.png", .invalidSourceURL("it is not UTF-8")),
        Case("/_/w:1/plain/http://x/%0A.png", .invalidSourceURL("it contains control characters")),
        Case("/_/w:1/aHR0cDovL3g+", .invalidBase64Source("aHR0cDovL3g+")),
        Case("/_/w:1/aHR0cDovL3gxA", .invalidBase64Source("aHR0cDovL3gxA")),  // a length of 1 mod 4, its bits all zero
        Case("/_/w:1/aHR0cDovL3h", .invalidBase64Source("aHR0cDovL3h")),  // non-zero unused bits
        Case("/_/w:1/enc/abcdef", .encryptedSourceUnsupported),
        Case("/_/w:1/plain/http://x/a.png@bmp", .unsupportedFormat("bmp")),
        Case("/_/w:1/aHR0cDovL3g.tiff", .unsupportedFormat("tiff")),
    ]

    @Test(arguments: paths)
    func refusesMalformedPaths(_ item: Case) {
        #expect(throws: item.error) { try unsigned.plan(forPath: item.path) }
    }

    static let options: [(String, ImageService.Error)] = [
        ("bogus:1", .unknownOption("bogus")),
        ("trim:10", .unsupportedOption("trim")),
        ("wm:0.5", .unsupportedOption("wm")),
        ("pd:10", .unsupportedOption("pd")),
        ("rs:fill:1:2:0:0:ce:0:0:9", .tooManyArguments(option: "rs", count: 9, limit: 8)),
        ("s:1:2:0:0:ce:0:0:9", .tooManyArguments(option: "s", count: 8, limit: 7)),
        ("w:1:2", .tooManyArguments(option: "w", count: 2, limit: 1)),
        ("g:ce:1:2:3", .tooManyArguments(option: "g", count: 4, limit: 3)),
        ("rs:crop:1", .invalidArgument(option: "rs", argument: "crop", expected: "fit, fill, fill-down, force or auto")),
        ("rt:", .invalidArgument(option: "rt", argument: "", expected: "a value")),
        ("w:abc", .invalidArgument(option: "w", argument: "abc", expected: "an integer number of pixels")),
        ("w:1.5", .invalidArgument(option: "w", argument: "1.5", expected: "an integer number of pixels")),
        ("w:-1", .outOfRange(option: "w", argument: "-1", range: "0...4096")),
        ("h:4097", .outOfRange(option: "h", argument: "4097", range: "0...4096")),
        ("s:4097", .outOfRange(option: "s", argument: "4097", range: "0...4096")),
        ("w:99999999999999999999", .invalidArgument(option: "w", argument: "99999999999999999999", expected: "an integer number of pixels")),
        ("dpr:0", .outOfRange(option: "dpr", argument: "0", range: "(0, 8]")),
        // libvips' sharpen takes sigma up to 10; past it, it ignored the value with a GLib warning.
        ("sh:10.5", .outOfRange(option: "sh", argument: "10.5", range: "0...10")),
        ("dpr:-1", .outOfRange(option: "dpr", argument: "-1", range: "(0, 8]")),
        ("dpr:8.01", .outOfRange(option: "dpr", argument: "8.01", range: "(0, 8]")),
        ("dpr:nan", .invalidArgument(option: "dpr", argument: "nan", expected: "a decimal number")),
        ("dpr:inf", .invalidArgument(option: "dpr", argument: "inf", expected: "a decimal number")),
        ("dpr:0x1p1", .invalidArgument(option: "dpr", argument: "0x1p1", expected: "a decimal number")),
        ("el:yes", .invalidArgument(option: "el", argument: "yes", expected: "a boolean (1, t, true, 0, f, false)")),
        ("ex:1:sm", .invalidArgument(option: "ex", argument: "sm", expected: "a gravity other than sm")),
        ("g:up", .invalidArgument(option: "g", argument: "up", expected: "a gravity (no, so, ea, we, noea, nowe, soea, sowe, ce, sm, fp)")),
        ("g:", .invalidArgument(option: "g", argument: "", expected: "a gravity type")),
        ("g:sm:1", .tooManyArguments(option: "g", count: 2, limit: 1)),
        ("g:fp:0.5", .invalidArgument(option: "g", argument: "fp:0.5", expected: "fp:%x:%y")),
        ("g:fp:1.5:0", .outOfRange(option: "g", argument: "1.5", range: "0...1")),
        ("g:fp:0:-0.1", .outOfRange(option: "g", argument: "-0.1", range: "0...1")),
        ("g:no:4097", .outOfRange(option: "g", argument: "4097", range: "-4096...4096")),
        ("g:no:0:-4096.5", .outOfRange(option: "g", argument: "-4096.5", range: "-4096...4096")),
        ("ex:1:so:0:5000", .outOfRange(option: "ex", argument: "5000", range: "-4096...4096")),
        ("ex:1:ce:0:0:9", .tooManyArguments(option: "ex", count: 5, limit: 4)),
        ("rt:fit:1", .tooManyArguments(option: "rt", count: 2, limit: 1)),
        ("fn:a:1:2", .tooManyArguments(option: "fn", count: 3, limit: 2)),
        ("fn:a:maybe", .invalidArgument(option: "fn", argument: "maybe", expected: "a boolean (1, t, true, 0, f, false)")),
        ("pr:sharp:nope", .unknownPreset("nope")),
        ("cb:a%3Ab", .tooManyArguments(option: "cb", count: 2, limit: 1)),  // %3A separates
        ("g:no:x", .invalidArgument(option: "g", argument: "x", expected: "a decimal number")),
        ("c:100", .invalidArgument(option: "c", argument: "100", expected: "a width and a height")),
        ("c:-1:10", .outOfRange(option: "c", argument: "-1", range: "0...4096")),
        ("c:10:5000", .outOfRange(option: "c", argument: "5000", range: "0...4096")),
        ("c:1:1:ce:0:0:1", .tooManyArguments(option: "c", count: 6, limit: 5)),
        ("q:0", .outOfRange(option: "q", argument: "0", range: "1...100")),
        ("q:101", .outOfRange(option: "q", argument: "101", range: "1...100")),
        ("q:high", .invalidArgument(option: "q", argument: "high", expected: "an integer")),
        ("f:bmp", .unsupportedFormat("bmp")),
        ("bg:fff", .invalidArgument(option: "bg", argument: "fff", expected: "a hex color of six digits")),
        ("bg:gggggg", .invalidArgument(option: "bg", argument: "gggggg", expected: "a hex color of six digits")),
        ("bg:1:2", .invalidArgument(option: "bg", argument: "1:2", expected: "%R:%G:%B or a hex color")),
        ("bg:0:256:0", .outOfRange(option: "bg", argument: "256", range: "0...255")),
        ("bg:0:-1:0", .outOfRange(option: "bg", argument: "-1", range: "0...255")),
        ("bg:0:x:0", .invalidArgument(option: "bg", argument: "x", expected: "an integer color channel")),
        ("bl:-1", .outOfRange(option: "bl", argument: "-1", range: "0...100")),
        ("sh:101", .outOfRange(option: "sh", argument: "101", range: "0...10")),
        ("rot:45", .outOfRange(option: "rot", argument: "45", range: "multiples of 90")),
        ("rot:right", .invalidArgument(option: "rot", argument: "right", expected: "an integer")),
        ("exp:soon", .invalidArgument(option: "exp", argument: "soon", expected: "a Unix time in seconds")),
        ("fn:IgA:1", .invalidArgument(option: "fn", argument: "IgA", expected: "a file name without control characters or quotes")),
        ("fn:!!:1", .invalidArgument(option: "fn", argument: "!!", expected: "URL-safe base64 of UTF-8")),
        ("fn:_w:1", .invalidArgument(option: "fn", argument: "_w", expected: "URL-safe base64 of UTF-8")),
        ("pr:nope", .unknownPreset("nope")),
        ("pr:", .unknownPreset("")),
    ]

    @Test(arguments: options)
    func refusesBadOptions(_ options: String, _ error: ImageService.Error) {
        #expect(throws: error) { try plan(options) }
    }

    @Test func tooLongAndTooManyOptions() throws {
        let decoder = try RequestDecoder(configuration: .init(signing: .unsignedAllowed, maxPathLength: 40, maxOptions: 2))
        #expect(throws: ImageService.Error.pathTooLong(length: 41, limit: 40)) {
            try decoder.plan(forPath: "/_/plain/http://x/" + String(repeating: "a", count: 23))
        }
        #expect(try decoder.plan(forPath: "/_/plain/http://x/" + String(repeating: "a", count: 22)).source.count == 31)
        #expect(throws: ImageService.Error.tooManyOptions(limit: 2)) {
            try decoder.plan(forPath: "/_/w:1/h:1/q:1/plain/http://x")
        }
        #expect(try decoder.plan(forPath: "/_/w:1/h:1/plain/http://x").height == 1)
    }

    @Test func refusesBadPresets() {
        #expect(throws: ImageService.Error.invalidPreset(name: "a", reason: ImageService.Error.unknownOption("bogus").description)) {
            try RequestDecoder(configuration: .init(signing: .unsignedAllowed, presets: ["a": "bogus:1"]))
        }
        #expect(throws: ImageService.Error.invalidPreset(name: "a", reason: ImageService.Error.recursivePreset("a").description)) {
            try RequestDecoder(configuration: .init(signing: .unsignedAllowed, presets: ["a": "pr:b", "b": "q:1/pr:a"]))
        }
        #expect(throws: ImageService.Error.invalidPreset(name: "a", reason: ImageService.Error.unknownPreset("c").description)) {
            try RequestDecoder(configuration: .init(signing: .unsignedAllowed, presets: ["a": "pr:c"]))
        }
    }

    @Test func aPresetUsedTwiceSideBySideIsNotRecursion() throws {
        #expect(try plan("pr:sharp:sharp").quality == 90)
        #expect(try plan("pr:sharp/pr:sharp").quality == 90)
    }

    @Test func messagesSayWhatToDo() {
        #expect(ImageService.Error.signatureMismatch.description.contains("sign the path"))
        #expect(ImageService.Error.unknownOption("bogus").description.contains("'bogus'"))
        #expect(ImageService.Error.pathTooLong(length: 9, limit: 8).description.contains("limit of 8"))
    }
}
