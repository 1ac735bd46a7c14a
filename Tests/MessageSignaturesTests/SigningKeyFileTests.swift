import Foundation
import MessageSignatures
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The gallery's signing key is used only from a private file, as ssh uses a private key: not a
/// link, owned by this user, readable and writable by no one else. Tests run as root, so a file
/// of another user is made with `chown` to 65534 (nobody).
@Suite struct SigningKeyFileTests {
    let directory: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("emojiart-key-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }()

    /// A valid key file, mode 0600, owned by this user.
    func keyFile(_ name: String = "gallery-signing.key") throws -> (URL, SigningKey) {
        let path = directory.appendingPathComponent(name)
        let (key, created) = try SigningKeyFile.readOrCreate(path)
        #expect(created)
        return (path, key)
    }

    func refusal(_ path: URL) -> String? {
        do {
            _ = try SigningKeyFile.read(path)
            return nil
        } catch {
            guard case .unsafe = error else { return "not unsafe: \(error)" }
            return error.description
        }
    }

    @Test func aPrivateKeyFileIsRead() throws {
        let (path, key) = try keyFile()
        #expect(try SigningKeyFile.read(path).fingerprint == key.fingerprint)
        #expect(try SigningKeyFile.readOrCreate(path).key.fingerprint == key.fingerprint)
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o602])
    func aKeyFileOpenToGroupOrOthersIsRefused(mode: Int) throws {
        let (path, _) = try keyFile()
        #expect(chmod(path.path, mode_t(mode)) == 0)
        let message = try #require(refusal(path))
        #expect(message.contains("chmod 600 \(path.path)") && message.contains(String(mode, radix: 8)), "\(message)")
    }

    @Test func aKeyFileOfAnotherUserIsRefused() throws {
        let (path, _) = try keyFile()
        #expect(chown(path.path, 65534, 65534) == 0)
        let message = try #require(refusal(path))
        #expect(message.contains("owned by user 65534") && message.contains("chown"), "\(message)")
    }

    @Test func aKeyFileThatIsALinkIsRefusedEvenToAPrivateKey() throws {
        let (target, _) = try keyFile("real.key")
        let link = directory.appendingPathComponent("gallery-signing.key")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: target.path)
        let message = try #require(refusal(link))
        #expect(message.contains("symbolic link"), "\(message)")
        // Nor is a new key made in its place, a dangling link included.
        #expect(throws: SigningKeyFile.Error.self) { try SigningKeyFile.readOrCreate(link) }
        let dangling = directory.appendingPathComponent("dangling.key")
        try FileManager.default.createSymbolicLink(atPath: dangling.path, withDestinationPath: directory.appendingPathComponent("nowhere").path)
        #expect(throws: SigningKeyFile.Error.self) { try SigningKeyFile.readOrCreate(dangling) }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("nowhere").path))
    }

    /// A directory that others may write (or another user owns) could have the key moved away,
    /// and a new one made at the next start: both refused, no key made (attacker round 4).
    @Test(arguments: [0o777, 0o770, 0o702])
    func aKeyInADirectoryOthersMayWriteIsRefused(mode: Int) throws {
        let (path, _) = try keyFile()
        #expect(chmod(directory.path, mode_t(mode)) == 0)
        let message = try #require(refusal(path))
        #expect(message.contains("its directory \(directory.path) is not private") && message.contains("chmod 700"), "\(message)")
        let missing = directory.appendingPathComponent("new.key")
        #expect(throws: SigningKeyFile.Error.self) { try SigningKeyFile.readOrCreate(missing) }
        #expect(!FileManager.default.fileExists(atPath: missing.path), "no key made there")
        #expect(chmod(directory.path, 0o700) == 0 && chown(directory.path, 65534, 65534) == 0)
        #expect(try #require(refusal(path)).contains("owned by user 65534"))
    }

    /// A private directory inside one that others may write, or another user owns: they could
    /// rename the key's directory away and put their own in its place (ssh's StrictModes checks
    /// every parent). Refused, naming the parent and the fix; a sticky parent (as `/tmp`) passes.
    @Test func aKeyWhoseDirectorysParentOthersMayWriteIsRefused() throws {
        let inner = directory.appendingPathComponent("keys")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let path = inner.appendingPathComponent("gallery-signing.key")
        _ = try SigningKeyFile.readOrCreate(path)
        #expect(refusal(path) == nil)
        #expect(chmod(directory.path, 0o777) == 0)
        let message = try #require(refusal(path))
        #expect(message.contains("its parent \(directory.path) may be written by group or others (mode 777)"), "\(message)")
        #expect(message.contains("chmod go-w \(directory.path)"), "\(message)")
        #expect(chmod(directory.path, 0o1777) == 0)
        #expect(refusal(path) == nil, "a sticky parent, as /tmp, lets no one else rename the directory")
        #expect(chmod(directory.path, 0o700) == 0 && chown(directory.path, 65534, 65534) == 0)
        #expect(try #require(refusal(path)).contains("its parent \(directory.path) is owned by user 65534"))
    }

    /// A key with a second name (a hard link) is a key another name also reaches: refused
    /// (attacker round 4: it was used).
    @Test func aKeyFileWithASecondNameIsRefused() throws {
        let (path, _) = try keyFile()
        #expect(link(path.path, directory.appendingPathComponent("elsewhere").path) == 0)
        #expect(try #require(refusal(path)).contains("2 names (hard links)"))
    }

    @Test func aDirectoryOrFIFOIsNotAKey() throws {
        let fifo = directory.appendingPathComponent("fifo.key")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        #expect(try #require(refusal(fifo)).contains("not a regular file"))
        #expect(throws: SigningKeyFile.Error.self) { try SigningKeyFile.read(directory) }
    }
}
