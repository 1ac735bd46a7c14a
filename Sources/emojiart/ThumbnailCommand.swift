import ArgumentParser
import Foundation
import Imaging

/// `emojiart thumbnail`: like `vipsthumbnail`, one image in, one thumbnail out.
struct ThumbnailCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "thumbnail",
            abstract: "Make a thumbnail that fits in a square box, keeping the aspect ratio; never upscales.",
            discussion: "Reads PNG, JPEG, WebP, GIF or AVIF. Inputs over 50 MB, 50 megapixels or 32,768 pixels a side, an AVIF, GIF, interlaced PNG or progressive JPEG that would take more than --decode-memory to decode (libvips holds those whole before it can shrink them), truncated or corrupt files are refused with an error and a non-zero exit status. Runs on libvips \(Imaging.libvipsVersion) (--version says whether its SIMD is on).",
            version: imagingVersion
        )
    }

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case png, webp, jpeg

        /// The format a file name's extension names (`.png`, `.webp`, `.jpg` or `.jpeg`, any case).
        init?(fileName: String) {
            switch URL(fileURLWithPath: fileName).pathExtension.lowercased() {
            case "png": self = .png
            case "webp": self = .webp
            case "jpg", "jpeg": self = .jpeg
            default: return nil
            }
        }
    }

    @Argument(help: "The image to read.")
    var input: String

    @Option(name: .shortAndLong, help: "Where to write the thumbnail.")
    var output: String

    @Option(help: "Side of the bounding box in pixels.")
    var size: Int = 200

    @Option(help: "Output format: png, webp or jpeg (default: the one the output's extension names, else png).")
    var format: Format?

    @Option(help: "Quality for webp and jpeg, 1-100.")
    var quality: Int = 80

    @Option(help: "Most memory, in MiB, that decoding the input may take (estimated from its header).")
    var decodeMemory: Int = Imaging.Limits.default.maxDecodeMemory / 1_048_576

    @Option(help: "Largest input accepted, in bytes.")
    var maxBytes: Int = Imaging.Limits.default.maxBytes

    @Option(help: "Largest input accepted, in pixels (width x height).")
    var maxPixels: Int = Imaging.Limits.default.maxPixels

    @Option(help: "Largest input width, and largest height, accepted.")
    var maxSide: Int = Imaging.Limits.default.maxSide

    func validate() throws {
        guard (1...10_000).contains(size) else { throw ValidationError("--size must be 1...10000, got \(size)") }
        guard (1...100).contains(quality) else { throw ValidationError("--quality must be 1...100, got \(quality)") }
        guard (1...65_536).contains(decodeMemory) else { throw ValidationError("--decode-memory must be 1...65536 MiB, got \(decodeMemory)") }
        guard maxBytes > 0, maxPixels > 0, maxSide > 0 else { throw ValidationError("--max-bytes, --max-pixels and --max-side must be at least 1") }
        let suffix = URL(fileURLWithPath: output).pathExtension
        if !suffix.isEmpty, Format(fileName: output) == nil {
            throw ValidationError("-o \(output): thumbnails are written as .png, .webp or .jpg files, not .\(suffix)")
        }
        if let format, let named = Format(fileName: output), named != format {
            throw ValidationError("-o \(output) names \(named.rawValue), but --format says \(format.rawValue): the file would not be what its name says; drop --format or rename the output")
        }
    }

    func run() throws {
        let folder = URL(fileURLWithPath: output).deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw CommandFailure("cannot write \(output): there is no folder \(folder)")
        }
        let limits = Imaging.Limits(maxPixels: maxPixels, maxSide: maxSide, maxBytes: maxBytes, maxDecodeMemory: decodeMemory * 1_048_576)
        let data = try Self.read(input, limit: limits.maxBytes)
        let outputFormat: OutputFormat = switch format ?? Format(fileName: output) ?? .png {
        case .png: .png
        case .webp: .webp(quality: quality)
        case .jpeg: .jpeg(quality: quality)
        }
        let thumbnail: EncodedImage
        do {
            thumbnail = try Imaging(limits: limits).thumbnail(data, fitting: size, format: outputFormat)
        } catch {
            throw CommandFailure("\(input): \(error)")
        }
        do {
            try Data(thumbnail.data).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw CommandFailure("cannot write \(output): \(error.localizedDescription)")
        }
        print("\(output): \(thumbnail.width)x\(thumbnail.height) \(thumbnail.mimeType), \(thumbnail.data.count) bytes")
    }

    /// The file at `path`, refused with a reason in words when it is missing, a folder, not a
    /// regular file (a pipe would wait for a writer forever, a device never end), unreadable or
    /// over `limit` bytes. Opened once, checked with `fstat` on that descriptor, and read to at
    /// most `limit` bytes, so a file that grows meanwhile is refused too.
    static func read(_ path: String, limit: Int) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CommandFailure("cannot read \(path): \(errno == ENOENT ? "there is no such file" : String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw CommandFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw CommandFailure("cannot read \(path): it is a folder, not an image")
        default: throw CommandFailure("cannot read \(path): it is not a regular file (a pipe, a socket or a device)")
        }
        func tooLarge(_ bytes: Int) -> CommandFailure {
            CommandFailure("\(path): \(Imaging.Error.inputTooLarge(bytes: bytes, limit: limit))")
        }
        guard Int(info.st_size) <= limit else { throw tooLarge(Int(info.st_size)) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(info.st_size))
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw CommandFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            guard bytes.count <= limit else { throw tooLarge(bytes.count) }
        }
    }
}

