// The namespace the disk format's hex helpers extend (Sources/ImageCache/SHA256Hex+Hex.swift),
// without the hashing, which needs swift-crypto: the fuzzer compiles the format's code alone.
public enum SHA256Hex {}
