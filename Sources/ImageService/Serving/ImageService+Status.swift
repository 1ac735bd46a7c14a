public import HTTPTypes
public import ImageCache

extension ImageService.Error {
    /// The status a request refused or failed for this reason is answered with, as imgproxy's
    /// users expect: 403 for a signature, 400 for the options, 404 for a source not found (or one
    /// the service may not fetch, as imgproxy answers it, or a URL that has expired), 413 or 422 for a source too large or not an image,
    /// 502 or 504 for a source that fails or is slow, 503 when the service is busy.
    public var status: HTTPResponse.Status {
        switch self {
        case .malformedSignature, .signatureMismatch: .forbidden
        // As imgproxy answers a source it may not fetch: like one that is not there.
        case .expired, .sourceNotFound, .sourceNotAllowed, .addressNotAllowed, .redirectNotAllowed: .notFound
        case .sourceTooLarge, .sourceFileTooLarge, .sourceResolutionTooLarge, .tooManyFrames: .contentTooLarge
        case .sourceNotAnImage, .sourceUndecodable, .resultTooLarge: .unprocessableContent
        case .sourceFailed, .tooManyRedirects: .badGateway
        case .sourceTimedOut: .gatewayTimeout
        case .busy, .processingTimedOut, .processingCancelled: .serviceUnavailable
        case .failed, .processingFailed, .invalidKey, .invalidSignatureSize, .invalidPreset: .internalServerError
        case .pathTooLong, .malformedPath, .invalidBase64Source, .invalidPercentEncoding, .invalidSourceURL,
            .encryptedSourceUnsupported, .tooManyOptions, .unknownOption, .unsupportedOption, .tooManyArguments,
            .invalidArgument, .outOfRange, .unsupportedFormat, .unknownPreset, .recursivePreset:
            .badRequest
        }
    }

    /// The service's reason for a pipeline's error: what the source or the processing did.
    init(_ error: ImagePipeline.Error) {
        switch error {
        case let .httpStatus(status, url) where status == 404 || status == 410:
            self = .sourceNotFound(url: url, status: status)
        case let .httpStatus(status, url):
            self = .sourceFailed(url: url, reason: "it answered HTTP \(status)")
        case let .timeout(url, seconds):
            self = .sourceTimedOut(url: url, seconds: seconds)
        case let .originUnreachable(url, reason), let .connectionFailed(url, reason):
            self = .sourceFailed(url: url, reason: reason)
        case let .bodyTooLarge(limit, url):
            self = .sourceTooLarge(url: url, limit: limit)
        case let .notAnImage(url, contentType):
            self = .sourceNotAnImage(url: url, contentType: contentType)
        case let .processingFailed(_, underlying):
            self = underlying as? ImageService.Error ?? .processingFailed(reason: String(describing: underlying))
        case let .tooBusy(stage, _):
            self = .busy(stage: stage)
        case let .invalidURL(url):
            self = .invalidSourceURL("\(url) cannot be fetched")
        default:
            self = .failed(error.description)
        }
    }
}
