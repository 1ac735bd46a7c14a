public import FastLane
public import Foundation
import HTTPCaching
public import HTTPTypes
public import ImageCache
public import Logging
import Imaging
public import NIOCore
import Synchronization

/// The image service: an imgproxy request path answered through an `ImagePipeline`, from the
/// path's bytes to the answer's, in ``answer(path:query:accept:ifNoneMatch:now:)``.
///
/// The pipeline must fetch with a ``SourceFetcher`` of the configuration's ``SourcePolicy`` (see
/// ``makePipeline(_:diskDirectory:memoryCostLimit:logger:)``): it is what makes every source a
/// stranger. Each source is fetched once for all its variants (whoever asks at once), kept and
/// revalidated by HTTP's rules; each variant is kept in memory and on disk under the key of its
/// processing, so two spellings of the same processing are one entry.
public struct ImageServer: Sendable {
    /// How the service runs.
    public let configuration: ImageServiceConfiguration
    /// Where every source and variant goes through.
    public let pipeline: ImagePipeline
    /// The service's counters, for `/metrics`.
    public let metrics: ImageServiceMetrics
    let decoder: RequestDecoder
    /// The loads of recent paths, so a memory hit repeats no decoding.
    let recentLoads = RecentLoads()
    /// Whether AVIF and WebP are offered: configured so, and written by this libvips (asked
    /// once, when the service is made: the check encodes an image).
    let offersAVIF: Bool
    let offersWebP: Bool
    /// What a source may be, checked from its header before it is decoded.
    let limits: Imaging.Limits

    /// A service over `pipeline`.
    /// - Throws: ``ImageService/Error/invalidPreset(name:reason:)`` for a preset that does not
    ///   parse: a bad preset stops the start, not a request.
    public init(configuration: ImageServiceConfiguration, pipeline: ImagePipeline, metrics: ImageServiceMetrics = ImageServiceMetrics()) throws(ImageService.Error) {
        self.configuration = configuration
        self.pipeline = pipeline
        self.metrics = metrics
        decoder = try RequestDecoder(configuration: .init(signing: configuration.signing, presets: configuration.presets))
        offersAVIF = configuration.offersAVIF && PlanProcessor.writesAVIF
        offersWebP = configuration.offersWebP && Imaging().canEncode(.webp(quality: 80))
        limits = Imaging.Limits(
            maxPixels: Int(configuration.maxSourceMegapixels * 1_000_000), maxBytes: configuration.sources.maxSourceBytes,
            maxFrames: configuration.maxAnimationFrames
        )
    }

    /// A pipeline for the service: sources fetched by a ``SourceFetcher`` of the configuration's
    /// policy, kept in `diskDirectory` (none: memory only).
    public static func makePipeline(
        _ configuration: ImageServiceConfiguration, diskDirectory: URL?, memoryCostLimit: Int = 256 << 20,
        logger: Logger = Logger(label: "image-service")
    ) -> ImagePipeline {
        // Sources are strangers' hosts: many may be slow at once, so downloads (waiting on the
        // network, not on a core) are many, six a host; work that cannot start within 10 s of
        // 64 queued is refused (503) rather than queued without end.
        let limits = ImagePipeline.Limits(downloads: 64, downloadsPerHost: 6, queueCapacity: 64, interactiveDeadline: .seconds(10))
        return ImagePipeline(configuration: .init(
            memoryCostLimit: memoryCostLimit, diskDirectory: diskDirectory,
            fetcher: SourceFetcher(policy: configuration.sources), limits: limits, logger: logger
        ))
    }

    /// One answer of the service: its status, header fields and body.
    public struct Answer: Sendable {
        /// The status.
        public var status: HTTPResponse.Status
        /// The header fields.
        public var headerFields: HTTPFields
        /// The body: the image's own buffer, never a copy; empty for a 304.
        public var body: ByteBuffer
    }

    /// The answer to `GET <prefix><path>`: the processed image, a 304, or an error with a short
    /// text saying what to do. Never the bytes of something that is not an image.
    /// - Parameters:
    ///   - path: the request's path as sent, after the service's ``ImageServiceConfiguration/pathPrefix``, without the query.
    ///   - query: the request's query, if it has one: refused (imgproxy's URLs have none, and a
    ///     cache in front must not keep one entry per query a client makes up).
    ///   - accept: the request's `Accept` (all its lines joined with commas).
    ///   - ifNoneMatch: the request's `If-None-Match`.
    ///   - now: the time `expires` is judged at.
    public func answer(path: String, query: String? = nil, accept: String?, ifNoneMatch: String?, now: Date = Date()) async -> Answer {
        let started = ContinuousClock.now
        let answer: Answer
        do {
            guard query == nil else { throw ImageService.Error.malformedPath(reason: "it has a query ('?'): imgproxy URLs take none") }
            answer = try await process(path: path, accept: accept, ifNoneMatch: ifNoneMatch, now: now)
        } catch {
            answer = Self.refusal(error)
        }
        metrics.answered(answer.status.code, after: ContinuousClock.now - started)
        return answer
    }

    private func process(path: String, accept: String?, ifNoneMatch: String?, now: Date) async throws -> Answer {
        let load = try prepare(path: path, accept: accept, now: now)
        let image: Image
        do {
            image = try await pipeline.image(for: load.request)
        } catch let error as ImagePipeline.Error {
            throw ImageService.Error(error)
        }
        return answer(load, image: image, ifNoneMatch: ifNoneMatch)
    }

    /// What one request asks the pipeline for, and how its answer is labelled.
    struct Load: Sendable {
        let plan: ProcessingPlan
        let request: ImageRequest
        let unixNow: Int64
    }

    /// The load `path` asks for: its signature and options checked, its expiry and its source
    /// judged, its format chosen. A path asked for before, with `Accept` of the same format
    /// class, is taken from ``RecentLoads`` (its bytes were checked then; only its expiry is
    /// judged again): a memory hit decodes nothing.
    func prepare(path: String, accept: String?, now: Date) throws -> Load {
        let unixNow = Int64(now.timeIntervalSince1970.rounded(.down))
        let negotiated = negotiated(accept)
        if let known = recentLoads.load(path, negotiated) {
            guard !known.plan.isExpired(atUnixTime: unixNow) else { throw ImageService.Error.expired(at: known.plan.expires ?? 0) }
            return Load(plan: known.plan, request: known.request, unixNow: unixNow)
        }
        let plan = try decoder.plan(forPath: path)
        guard !plan.isExpired(atUnixTime: unixNow) else { throw ImageService.Error.expired(at: plan.expires ?? 0) }
        guard let source = URL(string: plan.source) else { throw ImageService.Error.invalidSourceURL("'\(plan.source.prefix(200))' does not parse as a URL") }
        // Refused by name before the pipeline sees it (which would say only "invalid URL").
        try configuration.sources.check(source)
        let output = plan.format.map(PlanProcessor.Output.format) ?? negotiated
        let processor = PlanProcessor(plan: plan, output: output, limits: limits, timeLimit: configuration.processingTimeLimit)
        let load = Load(plan: plan, request: ImageRequest(url: source, processor: TimedProcessor(processor, metrics: metrics)), unixNow: unixNow)
        recentLoads.keep(load, for: path, negotiated)
        return load
    }

    /// The answer with `image`: 200 with its bytes, or 304 when `ifNoneMatch` matches its ETag.
    func answer(_ load: Load, image: Image, ifNoneMatch: String?) -> Answer {
        let etag = etag(of: image, forKey: load.request.cacheKey)
        var fields = HTTPFields()
        fields[.eTag] = etag
        fields[.cacheControl] = cacheControl(load.plan, unixNow: load.unixNow)
        if load.plan.format == nil { fields[.vary] = "Accept" }
        if ifNoneMatch.map({ ConditionalRequest.matches($0, etag: etag) }) == true {
            fields[.xContentTypeOptions] = "nosniff"
            return Answer(status: .notModified, headerFields: fields, body: ByteBuffer())
        }
        // An entry read back from the disk cache says its own type: only an image type is sent.
        let contentType = ServedImageType.contentType(for: image.contentType)
        fields[.contentType] = contentType
        fields[.contentLength] = String(image.byteCount)
        if let filename = load.plan.filename {
            fields[.contentDisposition] = Self.contentDisposition(filename: filename, contentType: contentType)
        }
        // Where the router's middleware would put it: the fast lane's answer is the route's.
        fields[.xContentTypeOptions] = "nosniff"
        return Answer(status: .ok, headerFields: fields, body: image.buffer)
    }

    /// The memory hits of the service, answered on the event loop by the fast lane, the same
    /// answer as ``answer(path:query:accept:ifNoneMatch:now:)`` byte for byte; `nil` (passed on to
    /// the route) for anything else: a miss, a refusal, a target outside the prefix or with a
    /// query. (The lane passes on by itself a path with `%` or `//`: a plain source spelt so is
    /// answered by the route.)
    public var fastLane: FastLane.Responder {
        { [self] request in
            let started = ContinuousClock.now
            let target = request.target
            let prefix = configuration.pathPrefix
            guard target.utf8.count > prefix.utf8.count + 1, target.hasPrefix(prefix), !target.contains("?") else { return nil }
            let path = prefix.isEmpty ? target : String(target.dropFirst(prefix.count))
            guard path.hasPrefix("/"), let load = try? prepare(path: path, accept: request.field("Accept"), now: Date()),
                  let image = pipeline.answerFromMemory(load.request)
            else { return nil }
            let answer = answer(load, image: image, ifNoneMatch: request.field("If-None-Match"))
            metrics.answered(answer.status.code, after: ContinuousClock.now - started)
            return FastLane.Answer(status: answer.status, headerFields: answer.headerFields, body: answer.body)
        }
    }

    /// AVIF or WebP when the client names it in `Accept` (a wildcard is no promise it decodes
    /// them) with a weight above 0 and the service offers it and can write it: the higher weight,
    /// AVIF on a tie. Otherwise the source's own format (JPEG when it cannot be written).
    func negotiated(_ accept: String?) -> PlanProcessor.Output {
        var avif = 0, webp = 0
        for preference in WeightedPreferences(accept) {
            if preference.names("image/avif") { avif = max(avif, preference.weight) }
            else if preference.names("image/webp") { webp = max(webp, preference.weight) }
        }
        if !offersAVIF { avif = 0 }
        if !offersWebP { webp = 0 }
        if avif > 0, avif >= webp { return .format(.avif) }
        if webp > 0 { return .format(.webp) }
        return .sourceFormat
    }

    /// `public, max-age=` the TTL, or what is left until the URL expires if that is sooner.
    func cacheControl(_ plan: ProcessingPlan, unixNow: Int64) -> String {
        var maxAge = Int64(configuration.ttl)
        if let expires = plan.expires { maxAge = min(maxAge, max(0, expires - unixNow)) }
        return "public, max-age=\(maxAge)"
    }

    /// The variant's strong ETag: the SHA-256 of its bytes, made once for the bytes memory holds
    /// and kept with them there.
    func etag(of image: Image, forKey key: String) -> String {
        if let kept = image.attachment as? ServiceETag { return kept.value }
        let made = ServiceETag(value: "\"" + SHA256Hex.digest(image) + "\"")
        _ = pipeline.memory.attach(made, toBytesOf: image, forKey: key)
        return made.value
    }

    /// `inline`, with the name (and the extension of `contentType`) as an ASCII `filename` and,
    /// when it is not plain ASCII, as RFC 8187's `filename*` too.
    static func contentDisposition(filename: String, contentType: String) -> String {
        let ext = contentType.hasPrefix("image/") ? "." + contentType.dropFirst(6).prefix { $0.isLetter } : ""
        let name = filename + (ext == ".jpeg" ? ".jpg" : String(ext))
        let ascii = String(name.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && scalar.value >= 0x20 && scalar != "\"" && scalar != "\\" && scalar.value != 0x7F ? Character(scalar) : "_"
        })
        var field = "inline; filename=\"\(ascii)\""
        if ascii != name {
            field += "; filename*=UTF-8''" + PercentEncoding.encode(name)
        }
        return field
    }

    /// The answer to a refused or failed request: its status, and a line of text saying what
    /// happened and what to do. Kept by nobody.
    static func refusal(_ error: any Swift.Error) -> Answer {
        let serviceError = error as? ImageService.Error ?? .failed(String(describing: error))
        var fields = HTTPFields()
        fields[.contentType] = "text/plain; charset=utf-8"
        fields[.cacheControl] = "no-store"
        // Words from outside (a source URL, a host) are shown, never obeyed: control characters
        // become U+FFFD.
        let printable = String(String.UnicodeScalarView(serviceError.description.unicodeScalars.map { scalar in
            scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format ? "\u{FFFD}" : scalar
        }))
        let text = ByteBuffer(string: printable + "\n")
        fields[.contentLength] = String(text.readableBytes)
        return Answer(status: serviceError.status, headerFields: fields, body: text)
    }
}

/// The ETag made for a variant's bytes, kept with them in memory (``Image/attachment``).
final class ServiceETag: ImageAttachment {
    let value: String
    var cost: Int { value.utf8.count + 32 }
    init(value: String) { self.value = value }
}

/// A processor that reports its time to the service's metrics: the identifier (and so the
/// cache key) is its wrapped processor's.
struct TimedProcessor: ImageProcessing {
    let wrapped: PlanProcessor
    let metrics: ImageServiceMetrics
    var identifier: String { wrapped.identifier }

    init(_ wrapped: PlanProcessor, metrics: ImageServiceMetrics) {
        self.wrapped = wrapped
        self.metrics = metrics
    }

    func process(_ image: Image) async throws -> Image {
        let started = ContinuousClock.now
        defer { metrics.processed(after: ContinuousClock.now - started) }
        return try await wrapped.process(image)
    }
}

/// The loads of the paths asked for lately, by path and the format `Accept` chose: what a memory
/// hit would otherwise decode again (the signature, the options, the source URL, the
/// processor's identifier). At most ``capacity`` entries; when full it starts again empty, so a
/// client that makes up paths costs it memory for no more than that many. A path is only kept
/// once it decoded: its bytes are the bytes that were checked.
final class RecentLoads: Sendable {
    static let capacity = 4096
    private let entries = Mutex<[Key: ImageServer.Load]>([:])

    struct Key: Hashable {
        let path: String
        let output: PlanProcessor.Output
    }

    func load(_ path: String, _ output: PlanProcessor.Output) -> ImageServer.Load? {
        entries.withLock { $0[Key(path: path, output: output)] }
    }

    func keep(_ load: ImageServer.Load, for path: String, _ output: PlanProcessor.Output) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[Key(path: path, output: output)] = load
        }
    }
}
