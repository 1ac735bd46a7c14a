import ArgumentParser
import Foundation
import HTTPCaching
import ImageService
import MessageSignatures

/// The image service's settings, as flags, each also read from imgproxy's own environment
/// variable (a flag wins), so an imgproxy deployment's settings carry over: `IMGPROXY_KEY`,
/// `IMGPROXY_SALT`, `IMGPROXY_SIGNATURE_SIZE`, `IMGPROXY_ALLOWED_SOURCES`,
/// `IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES`, `IMGPROXY_ALLOW_LINK_LOCAL_SOURCE_ADDRESSES`,
/// `IMGPROXY_ALLOW_PRIVATE_SOURCE_ADDRESSES`,
/// `IMGPROXY_MAX_SRC_RESOLUTION`, `IMGPROXY_MAX_SRC_FILE_SIZE`, `IMGPROXY_TTL`, `IMGPROXY_PRESETS`, `IMGPROXY_TIMEOUT`,
/// `IMGPROXY_DOWNLOAD_TIMEOUT`.
struct ImageServiceOptions: ParsableArguments {
    @OptionGroup var keys: KeyOptions

    @Flag(help: "Accept URLs without a valid signature (imgproxy without a key). Only for development: anybody may then make the service fetch and process any allowed source.")
    var unsigned = false

    @Option(help: ArgumentHelp("A source URL prefix the service may fetch, such as https://images.example.com/; repeat for more ($IMGPROXY_ALLOWED_SOURCES, comma-separated). A source matching none is refused.", valueName: "prefix"))
    var allowedSource: [String] = []

    @Flag(help: "Allow sources whose address is loopback (127.0.0.0/8, ::1) ($IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES).")
    var allowLoopbackSources = false

    @Flag(help: "Allow sources whose address is link-local (169.254.0.0/16, fe80::/10: a cloud's metadata service lives there) ($IMGPROXY_ALLOW_LINK_LOCAL_SOURCE_ADDRESSES).")
    var allowLinkLocalSources = false

    @Flag(help: "Allow sources whose address is private (10/8, 172.16/12, 192.168/16, fc00::/7) ($IMGPROXY_ALLOW_PRIVATE_SOURCE_ADDRESSES).")
    var allowPrivateSources = false

    @Option(help: ArgumentHelp("The largest source resolution decoded, in megapixels; above it a source is refused from its header ($IMGPROXY_MAX_SRC_RESOLUTION, 50 by default).", valueName: "megapixels"))
    var maxSourceMegapixels: Double?

    @Option(help: ArgumentHelp("The most bytes of a source ($IMGPROXY_MAX_SRC_FILE_SIZE; 64 MiB by default).", valueName: "bytes"))
    var maxSourceBytes: Int?

    @Option(help: ArgumentHelp("The longest the processing of one source may take; past it the answer is 503 ($IMGPROXY_TIMEOUT, 10 by default).", valueName: "seconds"))
    var timeout: Double?

    @Option(help: ArgumentHelp("The longest the fetch of a source may take, redirects included; past it the answer is 504 ($IMGPROXY_DOWNLOAD_TIMEOUT, 10 by default).", valueName: "seconds"))
    var downloadTimeout: Double?

    @Option(help: ArgumentHelp("How long clients and proxies may keep an answer ($IMGPROXY_TTL, a year by default); a URL's expires shortens it.", valueName: "seconds"))
    var ttl: Int?

    @Option(help: ArgumentHelp("A preset, name=options such as thumb=rs:fill:200:200/q:80; repeat for more ($IMGPROXY_PRESETS, comma-separated). A preset named default applies to every URL.", valueName: "name=options"))
    var preset: [String] = []

    /// The environment the settings are read from when no flag gives them.
    var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// Whether the service is asked for: an allowed source (by flag or `IMGPROXY_ALLOWED_SOURCES`),
    /// or any of its flags. The app serves the service only then; a flag without an allowed
    /// source stops the start with a message, never passes unnoticed.
    var isGiven: Bool {
        !allowedSource.isEmpty || environment["IMGPROXY_ALLOWED_SOURCES"]?.isEmpty == false || unsigned || !preset.isEmpty
            || keys.key != nil || keys.keyFile != nil
    }

    /// These settings as flags for another `emojiart` process (the cluster's instances); those
    /// read from the environment are inherited with it.
    var forwarded: [String] {
        var arguments: [String] = []
        if let key = keys.key { arguments += ["--key", key] }
        if let salt = keys.salt { arguments += ["--salt", salt] }
        if let keyFile = keys.keyFile { arguments += ["--key-file", URL(fileURLWithPath: keyFile).standardizedFileURL.path] }
        if let size = keys.signatureSize { arguments += ["--signature-size", "\(size)"] }
        if unsigned { arguments.append("--unsigned") }
        for source in allowedSource { arguments += ["--allowed-source", source] }
        if allowLoopbackSources { arguments.append("--allow-loopback-sources") }
        if allowLinkLocalSources { arguments.append("--allow-link-local-sources") }
        if allowPrivateSources { arguments.append("--allow-private-sources") }
        if let maxSourceMegapixels { arguments += ["--max-source-megapixels", "\(maxSourceMegapixels)"] }
        if let maxSourceBytes { arguments += ["--max-source-bytes", "\(maxSourceBytes)"] }
        if let ttl { arguments += ["--ttl", "\(ttl)"] }
        if let timeout { arguments += ["--timeout", "\(timeout)"] }
        if let downloadTimeout { arguments += ["--download-timeout", "\(downloadTimeout)"] }
        for entry in preset { arguments += ["--preset", entry] }
        return arguments
    }

    /// The service's configuration, mounted at `pathPrefix`.
    /// - Throws: `ValidationError` saying what to give: a key (or `--unsigned`), an allowed
    ///   source, a setting that does not parse.
    func configuration(pathPrefix: String = "") throws -> ImageServiceConfiguration {
        let signing: RequestDecoder.Configuration.Signing
        if let signer = try keys.signer() {
            signing = .required(signer)
        } else if unsigned {
            signing = .unsignedAllowed
        } else {
            throw ValidationError("the image service needs a key: give --key-file (or --key and --salt, or IMGPROXY_KEY and IMGPROXY_SALT), or --unsigned to accept unsigned URLs")
        }
        var sources = allowedSource
        if sources.isEmpty, let listed = environment["IMGPROXY_ALLOWED_SOURCES"] {
            sources = listed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        guard !sources.isEmpty else {
            throw ValidationError("the image service needs at least one --allowed-source prefix (or IMGPROXY_ALLOWED_SOURCES): it fetches nothing else")
        }
        let loopback = allowLoopbackSources || Self.isTrue(environment["IMGPROXY_ALLOW_LOOPBACK_SOURCE_ADDRESSES"])
        let linkLocal = allowLinkLocalSources || Self.isTrue(environment["IMGPROXY_ALLOW_LINK_LOCAL_SOURCE_ADDRESSES"])
        let privateAddresses = allowPrivateSources || Self.isTrue(environment["IMGPROXY_ALLOW_PRIVATE_SOURCE_ADDRESSES"])
        let maxBytes = try maxSourceBytes ?? environment["IMGPROXY_MAX_SRC_FILE_SIZE"].map { try Self.number($0, "IMGPROXY_MAX_SRC_FILE_SIZE") }.flatMap { $0 > 0 ? $0 : nil } ?? 64 << 20
        let megapixels = try maxSourceMegapixels ?? environment["IMGPROXY_MAX_SRC_RESOLUTION"].map { value in
            guard let number = Double(value), number > 0 else { throw ValidationError("IMGPROXY_MAX_SRC_RESOLUTION must be a number of megapixels above 0, got \(value)") }
            return number
        } ?? 50
        guard megapixels > 0 else { throw ValidationError("--max-source-megapixels must be above 0") }
        let ttl = try ttl ?? environment["IMGPROXY_TTL"].map { try Self.number($0, "IMGPROXY_TTL") } ?? 31_536_000
        guard ttl >= 0 else { throw ValidationError("--ttl must be 0 or more seconds") }
        var presets: [String: String] = [:]
        let presetList = preset.isEmpty ? (environment["IMGPROXY_PRESETS"]?.split(separator: ",").map(String.init) ?? []) : preset
        for entry in presetList {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty else { throw ValidationError("a preset is name=options, such as thumb=rs:fill:200:200; got \(entry)") }
            presets[String(parts[0])] = String(parts[1])
        }
        let processingSeconds = try timeout ?? environment["IMGPROXY_TIMEOUT"].map { try Self.seconds($0, "IMGPROXY_TIMEOUT") } ?? 10
        let downloadSeconds = try downloadTimeout ?? environment["IMGPROXY_DOWNLOAD_TIMEOUT"].map { try Self.seconds($0, "IMGPROXY_DOWNLOAD_TIMEOUT") } ?? 10
        guard processingSeconds > 0, downloadSeconds > 0 else { throw ValidationError("--timeout and --download-timeout must be above 0 seconds") }
        let policy = SourcePolicy(allowedSources: sources, allowsLoopback: loopback, allowsLinkLocal: linkLocal, allowsPrivate: privateAddresses, maxSourceBytes: maxBytes,
            timeout: .milliseconds(Int64(downloadSeconds * 1000)))
        var configuration = ImageServiceConfiguration(
            signing: signing, sources: policy, presets: presets, maxSourceMegapixels: megapixels, ttl: ttl, pathPrefix: pathPrefix
        )
        configuration.processingTimeLimit = .milliseconds(Int64(processingSeconds * 1000))
        return configuration
    }

    /// What the start-up says of who may ask: signed with a key, or not at all.
    static func signingNotice(_ configuration: ImageServiceConfiguration) -> String {
        switch configuration.signing {
        case let .required(signer): "URLs must be signed (HMAC-SHA256, \(signer.signatureSize)-byte signatures)"
        case .unsignedAllowed: "WARNING: unsigned URLs are accepted (--unsigned): anybody may have any allowed source processed"
        }
    }

    static func isTrue(_ value: String?) -> Bool {
        guard let value = value?.lowercased() else { return false }
        return ["1", "true", "yes", "on"].contains(value)
    }

    static func seconds(_ value: String, _ name: String) throws -> Double {
        guard let number = Double(value), number.isFinite, number > 0 else { throw ValidationError("\(name) must be a number of seconds above 0, got \(value)") }
        return number
    }

    static func number(_ value: String, _ name: String) throws -> Int {
        guard let number = Int(value) else { throw ValidationError("\(name) must be a whole number, got \(value)") }
        return number
    }

    func validate() throws {
        if let maxSourceBytes, maxSourceBytes < 1 { throw ValidationError("--max-source-bytes must be at least 1") }
    }
}

/// The image service's key and salt, by flag, private file or imgproxy's environment variables.
struct KeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The key URLs are signed with, hex ($IMGPROXY_KEY). Prefer --key-file: a flag is seen by every user in the process list.", valueName: "hex"))
    var key: String?

    @Option(help: ArgumentHelp("The salt URLs are signed with, hex ($IMGPROXY_SALT).", valueName: "hex"))
    var salt: String?

    @Option(help: ArgumentHelp("A private file (mode 0600, yours, no link) with the lines IMGPROXY_KEY=<hex> and IMGPROXY_SALT=<hex>, as imgproxy's environment file has them.", valueName: "path"))
    var keyFile: String?

    @Option(help: ArgumentHelp("Bytes of the signature kept, 1 to 32 ($IMGPROXY_SIGNATURE_SIZE, 32 by default).", valueName: "bytes"))
    var signatureSize: Int?

    /// The environment the key is read from when no flag gives it.
    var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// The key and the salt, hex: from the flags, else the key file, else the environment.
    func keyAndSalt() throws -> (key: String, salt: String)? {
        if let keyFile {
            let contents: GuardedFile.Contents
            do {
                contents = try GuardedFile.readPrivate(keyFile, limit: 4_096)
            } catch {
                switch error {
                case let .unsafe(reason, fix): throw ValidationError("--key-file \(keyFile) is not private (\(reason)), so it is not used: \(fix)")
                case let .unreadable(reason): throw ValidationError("--key-file \(keyFile) cannot be read: \(reason)")
                }
            }
            var values: [String: String] = [:]
            for line in String(decoding: contents.bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
                let parts = line.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                values[parts[0].trimmingCharacters(in: .whitespaces)] = parts[1].trimmingCharacters(in: .whitespaces)
            }
            guard let key = values["IMGPROXY_KEY"], let salt = values["IMGPROXY_SALT"] else {
                throw ValidationError("--key-file \(keyFile) has no IMGPROXY_KEY=<hex> and IMGPROXY_SALT=<hex> lines")
            }
            return (key, salt)
        }
        if let key = key ?? environment["IMGPROXY_KEY"], let salt = salt ?? environment["IMGPROXY_SALT"] { return (key, salt) }
        if key != nil || salt != nil || environment["IMGPROXY_KEY"] != nil || environment["IMGPROXY_SALT"] != nil {
            throw ValidationError("give both the key and the salt (--key and --salt, --key-file, or IMGPROXY_KEY and IMGPROXY_SALT)")
        }
        return nil
    }

    /// The signer URLs are checked with, or `nil` with no key.
    func signer() throws -> Signer? {
        guard let (key, salt) = try keyAndSalt() else { return nil }
        let size = try signatureSize ?? environment["IMGPROXY_SIGNATURE_SIZE"].map { try ImageServiceOptions.number($0, "IMGPROXY_SIGNATURE_SIZE") } ?? 32
        return try Signer(keyHex: key, saltHex: salt, signatureSize: size)
    }

    func validate() throws {
        if let signatureSize, !(1...32).contains(signatureSize) { throw ValidationError("--signature-size must be 1...32 bytes") }
    }
}
