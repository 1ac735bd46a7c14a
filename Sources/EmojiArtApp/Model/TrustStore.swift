public import Foundation
import HTTPCaching
public import MessageSignatures
#if canImport(Glibc)
import Glibc
#endif

/// The gallery keys this machine trusts, by gallery origin (`http://host:port`), and for each
/// gallery origin and key (the origin its signed answers name, and the key's fingerprint) the
/// newest signature `created` accepted and the identity of the last feeds accepted (the SHA-256
/// of `ETag` and body together, so a stored feed changed on disk is told from one this machine
/// authenticated), in a JSON file under the data
/// directory (`$XDG_DATA_HOME/emojiart/trusted-galleries.json`), not the cache directory:
/// clearing the cache must not reset trust, nor open a window for replaying an older feed.
///
/// Instances on one machine share the file: each change is a read-modify-write under an
/// exclusive `flock` on `trusted-galleries.json.lock`, written to a temporary file and renamed
/// into place. It fails closed: a file that exists but cannot be read or parsed is an error
/// naming it (never taken as empty, never rewritten). Thread-safe.
public struct TrustStore: Sendable {
    /// The trust file.
    public let file: URL

    /// A store in `file`; by default the data directory's `trusted-galleries.json`.
    public init(file: URL = DataDirectory.url.appendingPathComponent("trusted-galleries.json")) {
        self.file = file
    }

    /// What can go wrong with the trust file.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What happened, naming the file, and what to do.
        public var description: String
    }

    /// What is recorded of the feeds accepted from one gallery origin with one key.
    struct FeedRecord: Codable, Sendable, Equatable {
        /// The newest signature `created` accepted, in seconds since 1970.
        var newestSignature: Int64?
        /// The identities (lowercase hex SHA-256 of `ETag` and body) of the last feeds
        /// accepted, newest last, at most ``TrustStore/acceptedFeedLimit``.
        var acceptedFeeds: [String] = []
        /// Until when the newest accepted feed's prices are current (seconds since 1970): the
        /// end of the last signature that authenticated or confirmed it, 24 h at most.
        var validUntil: Int64?
    }

    /// The file's contents.
    struct Contents: Codable, Sendable, Equatable {
        /// Trusted keys by gallery origin.
        var galleries: [String: JSONWebKey] = [:]
        /// What was accepted, by gallery origin (as its signed answers name it), then by key
        /// fingerprint.
        var feeds: [String: [String: FeedRecord]] = [:]
        /// Builds before 2026-11-27: the newest signature `created` accepted from each key, by
        /// fingerprint alone. Read and kept, never updated: it stays a floor for every origin
        /// signing with that key, so upgrading opens no window for replaying what was refused.
        var newestSignatures: [String: Int64] = [:]
        /// Builds before 2026-11-27: the feeds accepted with each key, by fingerprint alone.
        /// Kept as read, never used: a stored feed recorded only there is not known to be of
        /// its origin, so it is fetched again.
        var acceptedFeeds: [String: [String]] = [:]

        init(galleries: [String: JSONWebKey] = [:], newestSignatures: [String: Int64] = [:], acceptedFeeds: [String: [String]] = [:]) {
            self.galleries = TrustStore.bracketingIPv6(galleries)
            self.newestSignatures = newestSignatures
            self.acceptedFeeds = acceptedFeeds
        }

        /// Reads every format that had `galleries`: the fields added later may be absent.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            galleries = TrustStore.bracketingIPv6(try container.decode([String: JSONWebKey].self, forKey: .galleries))
            feeds = try container.decodeIfPresent([String: [String: FeedRecord]].self, forKey: .feeds) ?? [:]
            newestSignatures = try container.decodeIfPresent([String: Int64].self, forKey: .newestSignatures) ?? [:]
            acceptedFeeds = try container.decodeIfPresent([String: [String]].self, forKey: .acceptedFeeds) ?? [:]
        }

        /// The newest signature accepted from `origin` with `fingerprint`, or recorded for the
        /// key alone by an older build, whichever is newer.
        func floor(of fingerprint: String, origin: String) -> Int64? {
            [feeds[origin]?[fingerprint]?.newestSignature, newestSignatures[fingerprint]].compactMap { $0 }.max()
        }
    }

    /// Where a stored feed stands among those accepted from its origin with its key.
    public enum FeedStanding: Sendable, Hashable {
        /// The newest accepted: usable offline, and as the request's validators; its prices are
        /// current until `validUntil`, when recorded.
        case newest(validUntil: Date?)
        /// Accepted, but a newer one was since: usable only as validators, which a bound,
        /// signed 304 must then confirm.
        case earlier
        /// Not among those accepted: changed on disk, or stored by an older build.
        case unknown
    }

    /// An origin key as builds before 2026-11-26 wrote an IPv6 gallery's (`http://::1:8080`),
    /// rewritten as `URL.originKey` writes it now (`http://[::1]:8080`), so a key trusted
    /// then is still the one trusted: first use must not start over for such a gallery. Other
    /// keys are kept as they are.
    static func bracketingIPv6(_ galleries: [String: JSONWebKey]) -> [String: JSONWebKey] {
        var result: [String: JSONWebKey] = [:]
        for (origin, key) in galleries {
            var canonical = origin
            if let separator = origin.range(of: "://"), let port = origin.lastIndex(of: ":"), port > separator.upperBound {
                let host = origin[separator.upperBound..<port]
                if host.contains(":"), !host.hasPrefix("["), let number = Int(origin[origin.index(after: port)...]) {
                    canonical = URL.origin(scheme: String(origin[..<separator.lowerBound]), host: String(host), port: number)
                }
            }
            // A file that has both forms keeps the key written in the current one.
            if canonical == origin || result[canonical] == nil { result[canonical] = key }
        }
        return result
    }

    /// How many accepted feed bodies are remembered per origin and key: enough for several
    /// instances sharing the trust file, each with its own stored copy, to find theirs.
    public static let acceptedFeedLimit = 16

    /// The key trusted for `gallery`, if any.
    public func key(for gallery: URL) throws(Failure) -> JSONWebKey? {
        try withLock { () throws(Failure) in try Self.read(file) }.galleries[gallery.originKey]
    }

    /// Trusts `key` for `gallery` from now on (replacing any earlier key): what
    /// `emojiart trust` does.
    /// - Returns: the key trusted before, if any.
    @discardableResult
    public func trust(_ key: JSONWebKey, for gallery: URL) throws(Failure) -> JSONWebKey? {
        try withLock { () throws(Failure) in
            var contents = try Self.read(file)
            let before = contents.galleries.updateValue(key, forKey: gallery.originKey)
            try Self.write(contents, to: file)
            return before
        }
    }

    /// Trusts `key` for `gallery` only if no key is trusted for it yet (compare-and-set under
    /// the lock: a key stored meanwhile, by `emojiart trust` say, is kept).
    /// - Returns: the key trusted for `gallery` after the call: `key`, or the one already there.
    public func trustOnFirstUse(_ key: JSONWebKey, for gallery: URL) throws(Failure) -> JSONWebKey {
        try withLock { () throws(Failure) in
            var contents = try Self.read(file)
            if let existing = contents.galleries[gallery.originKey] { return existing }
            contents.galleries[gallery.originKey] = key
            try Self.write(contents, to: file)
            return key
        }
    }

    /// The newest signature `created` accepted from `origin` with the key `fingerprint`, if any
    /// (or recorded for that key by an older build, when newer).
    public func newestSignature(of fingerprint: String, origin: String) throws(Failure) -> Date? {
        try withLock { () throws(Failure) in try Self.read(file) }.floor(of: fingerprint, origin: Self.canonical(origin))
            .map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    /// Accepts a signature made at `created` by the key `fingerprint` for the gallery `origin`
    /// unless one newer by more than `skew` was accepted before from that origin and key, and
    /// remembers the newest; checked and written under the lock, so two apps cannot each accept
    /// what the other's newer one rules out. When accepted, `feedDigest` (the accepted feed's
    /// identity: the SHA-256, hex, of its `ETag` and body together) is remembered in the same
    /// write among the last ``acceptedFeedLimit`` accepted from that origin and key: as the
    /// newest, current until `validUntil`, when its signature is at least as new as every one
    /// accepted before, else as an earlier one.
    /// - Returns: `nil` when accepted, else the newer signature's `created`.
    public func acceptSignature(
        created: Date, of fingerprint: String, origin: String, skew: TimeInterval = 60, feedDigest: String? = nil,
        validUntil: Date? = nil
    ) throws(Failure) -> Date? {
        let verdict = try accept(
            Acceptance(created: created, fingerprint: fingerprint, origin: origin, skew: skew, feedDigest: feedDigest, validUntil: validUntil)
        )
        if case let .replayed(newest) = verdict { return newest }
        return nil
    }

    /// Everything a feed answer that passed every other check leaves in the trust file, written
    /// at once by ``accept(_:)``: nothing of it is written before the whole answer is accepted.
    public struct Acceptance: Sendable {
        /// The signature's `created`.
        public var created: Date
        /// The fingerprint of the key that made it.
        public var fingerprint: String
        /// The gallery origin its answer names.
        public var origin: String
        /// The clock skew allowed against the newest signature accepted before.
        public var skew: TimeInterval
        /// The identity of the feed it signed or confirmed (hex SHA-256 of `ETag` and body).
        public var feedDigest: String?
        /// Until when that feed's prices are current.
        public var validUntil: Date?
        /// On first contact (no pin, nothing remembered): the key to trust for the gallery at
        /// this URL's origin, unless another was stored meanwhile.
        public var firstUse: (key: JSONWebKey, gallery: URL)?

        /// An acceptance of the signature `created` by `fingerprint` for `origin`.
        public init(
            created: Date, fingerprint: String, origin: String, skew: TimeInterval = 60, feedDigest: String? = nil,
            validUntil: Date? = nil, firstUse: (key: JSONWebKey, gallery: URL)? = nil
        ) {
            (self.created, self.fingerprint, self.origin, self.skew) = (created, fingerprint, origin, skew)
            (self.feedDigest, self.validUntil, self.firstUse) = (feedDigest, validUntil, firstUse)
        }
    }

    /// What ``accept(_:)`` decided.
    public enum Verdict: Sendable, Hashable {
        /// Accepted and recorded.
        case accepted
        /// Refused, nothing written: a signature newer by more than the skew (its `created`) was
        /// accepted before from that origin and key.
        case replayed(newest: Date)
        /// Refused, nothing written: first contact, but this key (the one trusted now) was
        /// stored for the gallery meanwhile (`emojiart trust --key=...` wins).
        case keyChanged(trusted: JSONWebKey)
    }

    /// Records `acceptance` in one write under the lock, or nothing: the first-use key
    /// (compare-and-set), the newest signature, the accepted feed and its `validUntil`
    /// (``acceptSignature(created:of:origin:skew:feedDigest:validUntil:)``). A refusal leaves the
    /// file byte for byte as it was.
    public func accept(_ acceptance: Acceptance) throws(Failure) -> Verdict {
        let seconds = Self.seconds(acceptance.created)
        let origin = Self.canonical(acceptance.origin)
        let fingerprint = acceptance.fingerprint
        return try withLock { () throws(Failure) -> Verdict in
            var contents = try Self.read(file)
            let before = contents
            if let (key, gallery) = acceptance.firstUse {
                if let existing = contents.galleries[gallery.originKey] {
                    if existing.thumbprint != key.thumbprint { return .keyChanged(trusted: existing) }
                } else {
                    contents.galleries[gallery.originKey] = key
                }
            }
            let floor = contents.floor(of: fingerprint, origin: origin)
            if let floor, Double(floor) - Double(seconds) > acceptance.skew {
                return .replayed(newest: Date(timeIntervalSince1970: TimeInterval(floor)))
            }
            var record = contents.feeds[origin]?[fingerprint] ?? FeedRecord()
            // Newest by its signature's date, not by when it arrived: a feed signed before the
            // newest (within the skew, held back on the way) is accepted, but never becomes the
            // newest, which an offline start shows and whose `validUntil` dates the prices.
            let isNewest = record.newestSignature.map { seconds >= $0 } ?? true
            if isNewest { record.newestSignature = seconds }
            if let feedDigest = acceptance.feedDigest {
                if isNewest {
                    if record.acceptedFeeds.last != feedDigest {
                        record.acceptedFeeds.removeAll { $0 == feedDigest }
                        record.acceptedFeeds.append(feedDigest)
                    }
                    record.validUntil = acceptance.validUntil.map(Self.seconds)
                } else if !record.acceptedFeeds.contains(feedDigest) {
                    record.acceptedFeeds.insert(feedDigest, at: max(0, record.acceptedFeeds.count - 1))
                }
                record.acceptedFeeds = Array(record.acceptedFeeds.suffix(Self.acceptedFeedLimit))
            }
            if record != contents.feeds[origin]?[fingerprint] { contents.feeds[origin, default: [:]][fingerprint] = record }
            if contents != before { try Self.write(contents, to: file) }
            return .accepted
        }
    }

    /// Where a feed whose identity (hex SHA-256 of `ETag` and body) is `feedDigest` stands among
    /// the last ``acceptedFeedLimit`` accepted from `origin` with the key `fingerprint`.
    public func standing(ofFeed feedDigest: String, of fingerprint: String, origin: String) throws(Failure) -> FeedStanding {
        let record = try withLock { () throws(Failure) in try Self.read(file) }.feeds[Self.canonical(origin)]?[fingerprint]
        let accepted = record?.acceptedFeeds ?? []
        if accepted.last == feedDigest { return .newest(validUntil: record?.validUntil.map { Date(timeIntervalSince1970: TimeInterval($0)) }) }
        return accepted.contains(feedDigest) ? .earlier : .unknown
    }

    /// Whether a feed whose identity is `feedDigest` is among the last ``acceptedFeedLimit``
    /// accepted from `origin` with the key `fingerprint` (``standing(ofFeed:of:origin:)``).
    public func acceptedFeed(_ feedDigest: String, of fingerprint: String, origin: String) throws(Failure) -> Bool {
        try standing(ofFeed: feedDigest, of: fingerprint, origin: origin) != .unknown
    }

    /// An origin as records are kept under it: lowercase.
    static func canonical(_ origin: String) -> String {
        origin.lowercased()
    }

    /// Whole seconds since 1970 of `date`, clamped to years 1-9999 so no date can trap.
    static func seconds(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970.rounded(.down)
        guard value.isFinite else { return 0 }
        return Int64(max(-62_135_596_800, min(253_402_300_799, value)))
    }

    private func withLock<T>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        let directory = file.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw Failure(description: "cannot create \(directory.path) for the trusted gallery keys (\(error.localizedDescription)): set XDG_DATA_HOME to a writable directory")
        }
        if let (reason, fix) = GuardedFile.unsafeDirectory(directory.path) {
            throw Failure(description: "the directory of the trust file, \(directory.path), is not private (\(reason)): \(fix), then retry; nothing was changed")
        }
        let lockPath = file.path + ".lock"
        // O_NOFOLLOW: a link planted at the lock's path is not followed (and not created
        // through); O_CLOEXEC: no child process inherits the lock.
        let lock = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard lock >= 0 else {
            throw Failure(description: "cannot open the trust file's lock \(lockPath) (\(String(cString: strerror(errno)))): remove it if it is not a regular file of yours, then retry")
        }
        defer { close(lock) }
        var locked = flock(lock, LOCK_EX)
        while locked != 0, errno == EINTR { locked = flock(lock, LOCK_EX) }
        guard locked == 0 else {
            throw Failure(description: "cannot lock \(lockPath) (\(String(cString: strerror(errno)))): the trust file \(file.path) is left as it is; retry")
        }
        defer { flock(lock, LOCK_UN) }
        return try body()
    }

    /// The file's contents; empty only when there is no such file. Any other failure (not a
    /// regular file, unreadable, too large, not JSON) is an error: trust never fails open.
    static func read(_ file: URL) throws(Failure) -> Contents {
        let what = "the trust file \(file.path)"
        let fix = "fix or move it away (then trust each gallery again with `emojiart trust --gallery URL`); nothing was changed"
        let contents: GuardedFile.Contents
        do {
            contents = try GuardedFile.read(file.path, limit: 4 << 20)
        } catch {
            switch error {
            case .noSuchFile: return Contents()
            case .symbolicLink: throw Failure(description: "\(what) is a symbolic link: \(fix)")
            case .notRegularFile: throw Failure(description: "\(what) is not a regular file: \(fix)")
            case let .tooLarge(size, limit): throw Failure(description: "\(what) is \(size) bytes, more than a trust file can be (\(limit)): \(fix)")
            case let .unreadable(reason): throw Failure(description: "\(what) cannot be read (\(reason)): \(fix)")
            }
        }
        // Whoever may write it decides which keys are trusted.
        guard contents.owner == GuardedFile.currentUser else {
            throw Failure(description: "\(what) is owned by user \(contents.owner), not by this user (\(GuardedFile.currentUser)): \(fix)")
        }
        guard contents.permissions & 0o022 == 0 else {
            throw Failure(description: "\(what) has mode \(String(contents.permissions, radix: 8)): group or others may change which keys are trusted; chmod 600 \(file.path) after checking it, or \(fix)")
        }
        let data = Data(contents.bytes)
        if let contents = try? JSONDecoder().decode(Contents.self, from: data) { return contents }
        // The first format: only the keys, by origin.
        do {
            return Contents(galleries: try JSONDecoder().decode([String: JSONWebKey].self, from: data))
        } catch {
            throw Failure(description: "\(what) is not readable JSON (\(error)): \(fix)")
        }
    }

    private static func write(_ contents: Contents, to file: URL) throws(Failure) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            try encoder.encode(contents).write(to: file, options: .atomic)
            // What this machine trusts is its user's business only.
            chmod(file.path, 0o600)
        } catch {
            throw Failure(description: "cannot write the trust file \(file.path): \(error.localizedDescription)")
        }
    }
}
