public import Foundation
public import ImageCache
public struct SourcePolicy: Sendable {
    public init(allowedSources: [String], allowLoopback: Bool, allowPrivate: Bool, maxBytes: Int) throws {}
    public func check(_ url: URL) throws(ImageService.Error) {}
}
public struct SourceFetcher: ImageFetching {
    public init(policy: SourcePolicy) {}
    public func fetch(_ request: ImageRequest) async throws -> Image { fatalError() }
}
public struct PlanProcessor: ImageProcessing {
    public enum Output: Sendable { case format(ProcessingPlan.Format), sourceFormat }
    public struct Limits: Sendable { public var maxSourcePixels: Int; public var maxFrames: Int }
    public init(plan: ProcessingPlan, output: Output, limits: Limits) {}
    public var identifier: String { "" }
    public func process(_ image: Image) async throws -> Image { image }
}
