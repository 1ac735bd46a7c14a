// A child process for ImageCacheTests' crash-safety test: writes cache entries in a loop, as
// fast as it can, until it is killed.
//
//   imagecache-crash-writer DIRECTORY SEED
//
// Entry `k<i>` holds a payload that names its key and generation, so the test can check that
// whatever survives a SIGKILL is a whole, correct entry. It also ends when the process that
// started it is gone (a test process that crashed never kills it).
import Foundation
import ImageCache

let arguments = CommandLine.arguments
guard arguments.count == 3, let seed = UInt64(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: imagecache-crash-writer DIRECTORY SEED\n".utf8))
    exit(2)
}
let storage = DiskStorage(directory: URL(fileURLWithPath: arguments[1]), sizeLimit: 4 * 1024 * 1024, synchronizesWrites: false)
do {
    try storage.setUp()
} catch {
    FileHandle.standardError.write(Data("setUp failed: \(error)\n".utf8))
    exit(1)
}
FileHandle.standardOutput.write(Data("ready\n".utf8))

var generator = SystemRandomNumberGenerator()
var generation = seed
let parent = getppid()
while getppid() == parent {
    generation += 1
    let key = "k\(Int.random(in: 0..<64, using: &generator))"
    let size = Int.random(in: 1_000...200_000, using: &generator)
    let header = Array("\(key) \(generation) \(size)|".utf8)
    let payload = header + [UInt8](repeating: UInt8(truncatingIfNeeded: generation), count: size)
    do {
        try storage.write(Image(data: payload, contentType: "application/x-test"), forKey: key)
    } catch {
        FileHandle.standardError.write(Data("write failed: \(error)\n".utf8))
    }
}
