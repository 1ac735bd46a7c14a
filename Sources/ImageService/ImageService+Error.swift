extension ImageService {
    /// Why a request path, a key or a processing option was refused; each case says what was
    /// wrong and, in ``description``, what to do.
    public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
        /// The path is longer than the decoder accepts.
        case pathTooLong(length: Int, limit: Int)
        /// The path is not `/<signature>/<options>/<source>`: `reason` says which part is missing.
        case malformedPath(reason: String)
        /// The signature is not URL-safe base64 of `expectedBytes` bytes.
        case malformedSignature(String, expectedBytes: Int)
        /// The signature is well formed but is not the HMAC of the path under the service's key.
        case signatureMismatch
        /// A key or salt given to a ``Signer`` is not usable.
        case invalidKey(what: String, reason: String)
        /// The signature size is outside 1...32 bytes.
        case invalidSignatureSize(Int)
        /// The base64 source URL does not decode.
        case invalidBase64Source(String)
        /// The plain source URL has a `%` not followed by two hex digits.
        case invalidPercentEncoding(String)
        /// The decoded source URL is not UTF-8 or is empty, or is no source to fetch (not http(s),
        /// no host, user information before the host).
        case invalidSourceURL(String)
        /// The source is encrypted (`/enc/`), an imgproxy Pro feature this service does not have.
        case encryptedSourceUnsupported
        /// More processing options than the decoder accepts.
        case tooManyOptions(limit: Int)
        /// No option of imgproxy has this name.
        case unknownOption(String)
        /// An imgproxy option this service does not implement.
        case unsupportedOption(String)
        /// An option was given more arguments than it takes.
        case tooManyArguments(option: String, count: Int, limit: Int)
        /// An option's argument does not parse as what it must be.
        case invalidArgument(option: String, argument: String, expected: String)
        /// An option's argument parses but is outside its range.
        case outOfRange(option: String, argument: String, range: String)
        /// The format (from `format`, or the URL's extension) is not one the service writes.
        case unsupportedFormat(String)
        /// A preset named in the path is not configured.
        case unknownPreset(String)
        /// A preset names itself, directly or through others.
        case recursivePreset(String)
        /// A configured preset's own options are invalid, or it includes itself; `reason` says how.
        case invalidPreset(name: String, reason: String)
        /// The URL's `expires` time (Unix seconds) has passed.
        case expired(at: Int64)
        /// The source answered 404 or 410.
        case sourceNotFound(url: String, status: Int)
        /// The source failed: an error status, a refused or broken connection; `reason` says which.
        case sourceFailed(url: String, reason: String)
        /// The source did not answer within the service's time limit.
        case sourceTimedOut(url: String, seconds: Double)
        /// The source's bytes are more than the service takes.
        case sourceTooLarge(url: String, limit: Int)
        /// The source's bytes are no image the service reads.
        case sourceNotAnImage(url: String, contentType: String)
        /// The service has more work waiting than it takes; asking again later may succeed.
        case busy(stage: String)
        /// Anything else that failed while answering, said as it was reported.
        case failed(String)

        // Source fetching (`Fetching/`): the service's refusals to fetch a source.
        /// The source URL begins with none of ``SourcePolicy/allowedSources``.
        case sourceNotAllowed(String)
        /// The source's host (or a redirect's) resolved to an address of a kind the policy does
        /// not connect to (``SourcePolicy/allows(_:)``): nothing was sent to it.
        case addressNotAllowed(host: String, address: String, kind: SourceAddress.Kind)
        /// The source redirected more than ``SourcePolicy/maxRedirects`` times.
        case tooManyRedirects(source: String, limit: Int)
        /// A redirect led to a URL that is not a source to fetch (not http(s), user information,
        /// no allowed prefix, or no URL at all): it was not followed.
        case redirectNotAllowed(from: String, to: String)

        // Processing a source (PlanProcessor): each says the HTTP status a server answers with.
        /// The source's header declares more pixels than the service takes (megapixels, a side,
        /// or the memory decoding it would take): answer 413.
        case sourceResolutionTooLarge(width: Int, height: Int, limit: String)
        /// The source's file is larger than the service takes: answer 413.
        case sourceFileTooLarge(bytes: Int, limit: Int)
        /// The source is an animation of more frames than the service takes: answer 413.
        case tooManyFrames(frames: Int, limit: Int)
        /// The source is not an image libvips decodes (empty, text, another format, truncated or
        /// corrupt): answer 422.
        case sourceUndecodable(reason: String)
        /// Processing or encoding failed on a good source: answer 500.
        case processingFailed(reason: String)
        /// The options ask for a result (an enlargement, an extension) of more pixels than the
        /// service makes: answer 422.
        case resultTooLarge(width: Int, height: Int, limit: Int)
        /// Processing took longer than the service's time limit and was stopped: answer 503.
        case processingTimedOut(seconds: Double)
        /// Processing was stopped because nobody waits for it any more.
        case processingCancelled

        /// What happened and what to do about it.
        public var description: String {
            switch self {
            case .pathTooLong(let length, let limit):
                "request path is \(length) bytes, over the limit of \(limit): shorten the options or the source URL"
            case .malformedPath(let reason):
                "request path is not /<signature>/<options>/<source>: \(reason)"
            case .malformedSignature(let signature, let expectedBytes):
                "signature '\(signature)' is not URL-safe base64 without padding of \(expectedBytes) bytes: sign the path with the service's key and salt"
            case .signatureMismatch:
                "signature does not match the path: sign the path after the signature with the service's key and salt"
            case .invalidKey(let what, let reason):
                "\(what) is not usable: \(reason); give it as an even number of hex digits"
            case .invalidSignatureSize(let size):
                "signature size \(size) is outside 1...32 bytes"
            case .invalidBase64Source(let source):
                "source '\(source)' is not URL-safe base64: encode the source URL, or give it after /plain/"
            case .invalidPercentEncoding(let source):
                "plain source '\(source)' has a '%' not followed by two hex digits: percent-encode the source URL"
            case .invalidSourceURL(let reason):
                "source URL is not usable: \(reason)"
            case .encryptedSourceUnsupported:
                "encrypted source URLs (/enc/) are not supported: give the source in base64 or after /plain/"
            case .tooManyOptions(let limit):
                "more than \(limit) processing options: use fewer, or a preset"
            case .unknownOption(let name):
                "unknown processing option '\(name)': see imgproxy's processing options"
            case .unsupportedOption(let name):
                "processing option '\(name)' is not supported by this service: remove it"
            case .tooManyArguments(let option, let count, let limit):
                "option '\(option)' has \(count) arguments, it takes at most \(limit)"
            case .invalidArgument(let option, let argument, let expected):
                "option '\(option)': '\(argument)' is not \(expected)"
            case .outOfRange(let option, let argument, let range):
                "option '\(option)': \(argument) is outside \(range)"
            case .unsupportedFormat(let format):
                "format '\(format)' is not supported: use jpg, png, webp, avif or gif"
            case .unknownPreset(let name):
                "preset '\(name)' is not configured: configure it or remove it from the path"
            case .recursivePreset(let name):
                "preset '\(name)' includes itself: fix the preset definitions"
            case .invalidPreset(let name, let reason):
                "preset '\(name)' is invalid: \(reason)"
            case .expired(let time):
                "the URL expired at \(time) (Unix time): ask its issuer for a new one"
            case .sourceNotFound(let url, let status):
                "the source \(url) answered \(status): check the source URL"
            case .sourceFailed(let url, let reason):
                "the source \(url) failed: \(reason); try again later, or check the source"
            case .sourceTimedOut(let url, let seconds):
                "the source \(url) did not answer within \(seconds) s: try again later"
            case .sourceTooLarge(let url, let limit):
                "the source \(url) is larger than \(limit) bytes: use a smaller source, or raise the service's limit"
            case .sourceNotAnImage(let url, let contentType):
                "the source \(url) is not an image (Content-Type \(contentType)): give the URL of an image"
            case .busy(let stage):
                "the service is busy (\(stage)): try again in a moment"
            case .failed(let reason):
                "the image could not be made: \(reason)"
            case .sourceNotAllowed(let source):
                "source \(source) matches none of the allowed sources: add its prefix to the allowed sources, or use an allowed one"
            case .addressNotAllowed(let host, _, let kind):
                // The address itself is not said: a client would learn what names resolve to inside.
                "source host \(host) resolves to a \(kind) address, which the service does not connect to: use a public source, or allow \(kind) addresses if the service is meant to reach them"
            case .tooManyRedirects(let source, let limit):
                "source \(source) redirected more than \(limit) times: give the final URL of the image, or raise the redirect limit"
            case .redirectNotAllowed(let from, let to):
                "source \(from) redirected to \(to), which is not an allowed source: it was not followed; give a URL that answers the image itself, or allow the target's prefix"
            case .sourceResolutionTooLarge(let width, let height, let limit):
                "source image is \(width)x\(height), over the limit of \(limit): use a smaller source image"
            case .sourceFileTooLarge(let bytes, let limit):
                "source image is \(bytes) bytes, over the limit of \(limit): use a smaller source file"
            case .tooManyFrames(let frames, let limit):
                "source image is an animation of \(frames) frames, over the limit of \(limit): use a source with fewer frames"
            case .sourceUndecodable(let reason):
                "source is not an image the service decodes: \(reason)"
            case .processingFailed(let reason):
                "processing the source failed: \(reason)"
            case .resultTooLarge(let width, let height, let limit):
                "the options ask for a \(width)x\(height) result, over the service's limit of \(limit) pixels: ask for a smaller size, or drop enlarge or extend"
            case .processingTimedOut(let seconds):
                "making the image took longer than the service's \(seconds) s and was stopped: ask for less (a smaller size, less blur or sharpening), or try again later"
            case .processingCancelled:
                "making the image was stopped: nobody waited for it any more"
            }
        }
    }
}
