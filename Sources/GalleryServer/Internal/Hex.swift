import Crypto

extension Digest {
    /// Lowercase hexadecimal, as in `sha256sum`.
    var hexDigest: String {
        map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
