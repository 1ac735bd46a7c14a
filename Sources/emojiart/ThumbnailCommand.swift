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
    }

    @Argument(help: "The image to read.")
    var input: String

    @Option(name: .shortAndLong, help: "Where to write the thumbnail.")
    var output: String

    @Option(help: "Side of the bounding box in pixels.")
    var size: Int = 200

    @Option(help: "Output format: png, webp or jpeg.")
    var format: Format = .png

    @Option(help: "Quality for webp and jpeg, 1-100.")
    var quality: Int = 80

    @Option(help: "Most memory, in MiB, that decoding the input may take (estimated from its header).")
    var decodeMemory: Int = Imaging.Limits.default.maxDecodeMemory / 1_048_576

    func validate() throws {
        guard (1...10_000).contains(size) else { throw ValidationError("--size must be 1...10000, got \(size)") }
        guard (1...100).contains(quality) else { throw ValidationError("--quality must be 1...100, got \(quality)") }
        guard (1...65_536).contains(decodeMemory) else { throw ValidationError("--decode-memory must be 1...65536 MiB, got \(decodeMemory)") }
    }

    func run() throws {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: input))
        } catch {
            throw ValidationError("cannot read \(input): \(error.localizedDescription)")
        }
        let outputFormat: OutputFormat = switch format {
        case .png: .png
        case .webp: .webp(quality: quality)
        case .jpeg: .jpeg(quality: quality)
        }
        let thumbnail: EncodedImage
        do {
            thumbnail = try Imaging(limits: .init(maxDecodeMemory: decodeMemory * 1_048_576)).thumbnail([UInt8](data), fitting: size, format: outputFormat)
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
}

