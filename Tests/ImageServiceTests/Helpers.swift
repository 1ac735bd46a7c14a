@testable import ImageService

/// A decoder that takes any signature, with two presets, for the option tables.
let unsigned = try! RequestDecoder(configuration: .init(
    signing: .unsignedAllowed,
    presets: ["sharp": "sh:0.7/q:90", "thumb": "rs:fill:150:150/pr:sharp"],
    maxDimension: 4096
))

/// The plan of options over a plain source, decoded unsigned.
func plan(_ options: String, source: String = "/plain/http://example.com/a.jpg") throws(ImageService.Error) -> ProcessingPlan {
    try unsigned.plan(forPath: "/_" + (options.isEmpty ? "" : "/" + options) + source)
}

/// A plan over the same source with some fields set, to compare against.
func expected(_ change: (inout ProcessingPlan) -> Void) -> ProcessingPlan {
    var plan = ProcessingPlan(source: "http://example.com/a.jpg")
    change(&plan)
    return plan
}
