import Crypto
public import Foundation

/// A certificate for 127.0.0.1 that the cluster's edge serves with `--tls`: a new P-256 key
/// (swift-crypto) signed by itself with `openssl req -x509`, valid for 30 days, with the SHA-256
/// of its public key (SPKI) that a browser can be told to accept it by
/// (Chromium's `--ignore-certificate-errors-spki-list`).
public struct SelfSignedCertificate: Sendable {
    /// The certificate and key files, for the edge.
    public let files: EdgeConfiguration.TLSFiles
    /// Base64 of the SHA-256 of the certificate's SubjectPublicKeyInfo.
    public let spkiSHA256: String

    /// Makes a key and a certificate in `directory` (`edge.key`, `edge.pem`; the directory and
    /// the key its owner's only: nginx's master process, which reads them, runs as that owner).
    /// - Throws: ``Failure`` when openssl is missing or fails; file errors.
    public static func make(in directory: URL, openssl: String = "/usr/bin/openssl") throws -> SelfSignedCertificate {
        guard FileManager.default.isExecutableFile(atPath: openssl) else {
            throw Failure(description: "openssl is not installed at \(openssl): run scripts/bootstrap (it installs Debian's openssl)")
        }
        // Owner only before the key is written: no other local user may read it, not even for
        // the moment between a file's creation and a change of its mode.
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        let key = P256.Signing.PrivateKey()
        let keyFile = directory.appendingPathComponent("edge.key")
        let certificateFile = directory.appendingPathComponent("edge.pem")
        guard FileManager.default.createFile(atPath: keyFile.path, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw Failure(description: "the edge's key could not be written to \(keyFile.path): check that the directory is writable and the disk not full")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = [
            "req", "-x509", "-new", "-key", keyFile.path, "-out", certificateFile.path, "-days", "30", "-sha256",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl req failed (\(process.terminationStatus)): \(String(decoding: message, as: UTF8.self).prefix(300))")
        }
        // The DER of the public key is its SubjectPublicKeyInfo, which the certificate carries.
        let spki = Data(SHA256.hash(data: key.publicKey.derRepresentation)).base64EncodedString()
        return SelfSignedCertificate(files: .init(certificate: certificateFile.path, key: keyFile.path), spkiSHA256: spki)
    }

    /// Making the certificate failed: what happened and what to do.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What happened and what to do.
        public let description: String
    }
}
