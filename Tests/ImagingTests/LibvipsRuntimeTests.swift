import Foundation
import Imaging
import Testing

/// Which libvips the process runs on. By default the pinned build of scripts/libvips.pin, which
/// scripts/install-libvips puts in a system prefix; with `VIPS=system` in the environment (the
/// build and the tests alike), Debian's. Debian's `vips.pc` must never win silently, and two
/// copies of libvips or glib in one process crash in GType registration.
@Suite struct LibvipsRuntimeTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `KEY=value` lines of scripts/libvips.pin.
    static func pin() throws -> [String: String] {
        let text = try String(contentsOf: root.appendingPathComponent("scripts/libvips.pin"), encoding: .utf8)
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        return values
    }

    static let usesDebianLibvips = ProcessInfo.processInfo.environment["VIPS"] == "system"

    /// The files mapped into this process whose names start with `prefix`.
    static func mappedFiles(named prefix: String) throws -> Set<String> {
        // Read to the end: /proc files report a size of 0, so a size-first read gets nothing.
        let file = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
        defer { try? file.close() }
        let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        try #require(maps.contains("/"), "the process's mappings were read")
        return Set(maps.split(separator: "\n").compactMap { line -> String? in
            guard let slash = line.firstIndex(of: "/") else { return nil }
            let path = String(line[slash...])
            return URL(fileURLWithPath: path).lastPathComponent.hasPrefix(prefix) ? path : nil
        })
    }

    @Test func theProcessRunsOnThePinnedLibvipsWithItsSIMDOn() throws {
        try Imaging.start()
        let pin = try Self.pin()
        if Self.usesDebianLibvips {
            #expect(Imaging.libvipsVersion.hasPrefix("8.14."), "Debian 12's libvips: \(Imaging.libvipsVersion)")
            #expect(!Imaging.isVectorised, "liborc's run-time SIMD stays off")
        } else {
            let version = try #require(pin["LIBVIPS_VERSION"])
            #expect(Imaging.libvipsVersion == version, "run scripts/bootstrap: the build linked \(Imaging.libvipsVersion)")
            #expect(Imaging.isVectorised, "Highway's ahead-of-time SIMD is on from 8.15")
        }
    }

    @Test func exactlyOneLibvipsAndOneGlibAreLoaded() throws {
        try Imaging.start()
        let libvips = try Self.mappedFiles(named: "libvips")
        let glib = try Self.mappedFiles(named: "libglib-2.0").union(try Self.mappedFiles(named: "libgobject-2.0"))
        if Self.usesDebianLibvips {
            #expect(libvips.count == 1, "\(libvips)")
            #expect(glib.count == 2, "Debian's glib and gobject, once each: \(glib)")
        } else {
            let pin = try Self.pin()
            let version = try #require(pin["LIBVIPS_VERSION"])
            let library = try #require(pin["LIBVIPS_LIBRARY"])
            #expect(libvips == ["/usr/local/lib/emojiart/libvips-\(version)/\(library)"])
            #expect(glib.isEmpty, "the pinned libvips holds its own glib; no other may be loaded: \(glib)")
        }
    }
}
