// libFuzzer target for the cache's disk entry decoder (`make fuzz`).
//
// Built by scripts/fuzz with `swiftc -sanitize=fuzzer,address` together with the decoder's own
// sources (DiskEntry.swift and its cache header record, Image.swift, HTTPCaching), so it exercises exactly the code the cache runs. Each
// input is decoded twice: as it is (nearly always rejected by the checksum), and with its last 8
// bytes replaced by a valid XXH3 checksum, so that the length checks and the metadata parser see
// every input too. A trap, an out-of-bounds access or a decoded image that claims bytes the input
// does not have is a crash, which libFuzzer reports with the input that caused it.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDiskEntry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    check(DiskEntry.decode(bytes, key: "k"), inputSize: size)
    if bytes.count >= DiskEntry.checksumSize {
        let body = bytes.count - DiskEntry.checksumSize
        let sum = DiskEntry.checksum(bytes, count: body)
        for byte in 0..<8 { bytes[body + byte] = UInt8(truncatingIfNeeded: sum >> (8 * UInt64(byte))) }
        check(DiskEntry.decode(bytes, key: "k"), inputSize: size)
    }
    return 0
}

private func check(_ result: Result<Image, DiskEntry.Problem>, inputSize: Int) {
    guard case let .success(image) = result else { return }
    precondition(image.data.count <= inputSize, "decoded a payload longer than the entry")
    precondition(image.contentType.utf8.count <= DiskEntry.contentTypeLimit, "decoded an over-long content type")
}
