import Foundation
import ImageCache
import Synchronization
import SystemPackage

/// The cache's hot paths against the plainest thing that could do the same job.
enum CacheBench {
    static func run(seconds: Double) async throws {
        try await memoryHit(seconds: seconds)
        try await diskHit()
        try setUp()
    }

    /// `ImageDatabase.image` on a memory hit versus a `Mutex`-guarded dictionary lookup of the
    /// same keys.
    static func memoryHit(seconds: Double) async throws {
        print("## Memory hit (ns/op; higher ratio is better, target >= 0.3x)\n")
        let directory = Bench.work + "/cache-memory"
        try? FileManager.default.removeItem(atPath: directory)
        let pipeline = ImagePipeline(configuration: .init(diskDirectory: URL(fileURLWithPath: directory), synchronizesWrites: false))
        let requests = (0..<1000).map { ImageRequest(url: URL(string: "http://127.0.0.1/gallery/image?\($0)")!) }
        let image = Image(data: [UInt8](repeating: 7, count: 30_000), contentType: "image/png")
        for request in requests { await pipeline.add(image, forKey: request.cacheKey) }
        let dictionary = Mutex([String: Image](uniqueKeysWithValues: requests.map { ($0.cacheKey, image) }))

        let batch = 1000
        let ours = try await Bench.millisecondsPerOp(seconds: seconds) {
            for request in requests { _ = try await pipeline.image(for: request) }
        } * 1e6 / Double(batch)
        let anchor = await Bench.millisecondsPerOp(seconds: seconds) {
            for request in requests { _ = dictionary.withLock { $0[request.cacheKey] } }
        } * 1e6 / Double(batch)
        Bench.table(["path", "ns/op", "ratio (anchor/ours)"], [
            ["ImagePipeline.image(for:) (memory hit)", Bench.format(ours, 0), Bench.format(anchor / ours) + "x"],
            ["Mutex<[String: Image]> lookup", Bench.format(anchor, 0), "1.00x"],
        ])
    }

    /// A disk hit of a 30 KB entry (read; lengths, key and XXH3 checked) versus a raw read of the
    /// same file.
    static func diskHit() async throws {
        print("## Disk hit, 30 KB entries (µs; lower is better, target <= 3x raw)\n")
        let directory = URL(fileURLWithPath: Bench.work + "/cache-disk")
        try? FileManager.default.removeItem(at: directory)
        // A memory tier too small to keep a 30 KB image: every lookup goes to disk.
        let configuration = ImagePipeline.Configuration(
            memoryCostLimit: 100_000, diskDirectory: directory, synchronizesWrites: false
        )
        let pipeline = ImagePipeline(configuration: configuration)
        await pipeline.setUp()
        let requests = (0..<200).map { ImageRequest(url: URL(string: "http://127.0.0.1/gallery/image?\($0)")!) }
        for (index, request) in requests.enumerated() {
            let payload = (0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
            await pipeline.store(image: Image(data: payload, contentType: "image/png"), forKey: request.cacheKey)
        }
        let paths = requests.map { FilePath(directory.path).appending(pipeline.disk!.fileName(forKey: $0.cacheKey)) }
        let rounds = 25
        var storage: [Double] = [], throughPipeline: [Double] = [], raw: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<rounds {
            for (request, path) in zip(requests, paths) {
                var start = clock.now
                _ = try rawRead(path)
                raw.append(start.duration(to: clock.now).milliseconds * 1000)
                start = clock.now
                _ = try pipeline.disk!.read(forKey: request.cacheKey)
                storage.append(start.duration(to: clock.now).milliseconds * 1000)
                start = clock.now
                _ = try await pipeline.image(for: request)
                throughPipeline.append(start.duration(to: clock.now).milliseconds * 1000)
            }
        }
        let stats = await pipeline.stats()
        guard stats.originFetches == 0, stats.diskHits == rounds * requests.count else {
            throw BenchError("the disk benchmark did not hit the disk every time: \(stats)")
        }
        func p(_ values: [Double], _ q: Double) -> Double { values.sorted()[Int(Double(values.count - 1) * q)] }
        let (rawP50, rawP99) = (p(raw, 0.5), p(raw, 0.99))
        Bench.table(["path", "p50 µs", "p99 µs", "p50 vs raw", "p99 vs raw"], [
            ["ImagePipeline.image(for:) (disk hit)", Bench.format(p(throughPipeline, 0.5), 1), Bench.format(p(throughPipeline, 0.99), 1),
             Bench.format(p(throughPipeline, 0.5) / rawP50) + "x", Bench.format(p(throughPipeline, 0.99) / rawP99) + "x"],
            ["DiskStorage.read", Bench.format(p(storage, 0.5), 1), Bench.format(p(storage, 0.99), 1),
             Bench.format(p(storage, 0.5) / rawP50) + "x", Bench.format(p(storage, 0.99) / rawP99) + "x"],
            ["raw read (open, read, close)", Bench.format(rawP50, 1), Bench.format(rawP99, 1), "1.00x", "1.00x"],
        ])
    }

    static func rawRead(_ path: FilePath) throws -> [UInt8] {
        let file = try FileDescriptor.open(path, .readOnly)
        return try file.closeAfter {
            let size = Int(try file.seek(offset: 0, from: .end))
            return try [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                count = try file.read(fromAbsoluteOffset: 0, into: UnsafeMutableRawBufferPointer(buffer))
            }
        }
    }

    /// `DiskStorage.setUp()` over 10,000 entries.
    static func setUp() throws {
        print("## setUp() of a cache directory with 10,000 entries\n")
        let directory = URL(fileURLWithPath: Bench.work + "/cache-setup")
        try? FileManager.default.removeItem(at: directory)
        let writer = DiskStorage(directory: directory, synchronizesWrites: false)
        try writer.setUp()
        for key in 0..<10_000 {
            try writer.write(Image(data: [UInt8](repeating: UInt8(key & 0xFF), count: 1_000), contentType: "image/png"), forKey: "entry-\(key)")
        }
        var times: [Double] = []
        var entries = 0
        for _ in 0..<5 {
            let start = ContinuousClock.now
            entries = try DiskStorage(directory: directory).setUp().entries
            times.append(start.duration(to: .now).milliseconds)
        }
        Bench.table(["entries", "median ms", "min ms"], [["\(entries)", Bench.format(times.sorted()[2], 1), Bench.format(times.min()!, 1)]])
    }
}
