import CVips
import Foundation

/// The Swift face of libvips: probing, thumbnailing and encoding images, with limits against
/// hostile input.
///
/// `Imaging` is a value type holding only its ``Limits``; every method is synchronous CPU work
/// and safe to call from many tasks at once. Callers on an actor should run it off the actor's
/// executor (a nonisolated or `@concurrent` function), because a thumbnail takes milliseconds.
///
/// libvips is started once, thread-safely, by ``start()`` or else the first time any `Imaging`
/// value is used. A program should call ``start()`` first thing, before it starts threads:
/// libvips' start-up sets environment variables, which races with other threads reading them. At start the operation cache is switched off (each image is seen once, as in an
/// image server, so caching operations only costs memory) and libvips' own thread pool is set
/// to one thread per pipeline: parallelism comes from running many images at once on several
/// threads (ImageCache runs processors on worker threads of its own), which scales with cores
/// without oversubscribing them. Set the environment variable `VIPS_CONCURRENCY` to override the
/// pool size. SIMD is on where libvips compiles it ahead of time (Highway, libvips 8.15 and
/// later, such as the 8.18 build EmojiArt ships on) and off on older libvips, whose run-time
/// compiled SIMD (liborc) crashed under concurrent resizing here, as it has for others.
/// ``libvipsVersion`` and ``isVectorised`` say which case a process is in.
public struct Imaging: Sendable {
    /// Bounds on what input is accepted, checked before any pixel is decoded.
    public struct Limits: Sendable, Hashable {
        /// Largest accepted width x height. Default: 50 megapixels, as in image servers.
        public var maxPixels: Int
        /// Largest accepted width, and largest accepted height. Default: 32,768. The pixel limit
        /// alone lets through a 25,000,000 x 2 image: libvips works a row at a time, and a row
        /// that long took 5 GB of memory and 19 s to make a thumbnail of (a 190 KB PNG).
        public var maxSide: Int
        /// Largest accepted encoded input in bytes. Default: 50 MB.
        public var maxBytes: Int
        /// Most memory, in bytes, that decoding an input may take, estimated from its header
        /// (see <doc:SafeImaging>): the inputs libvips must hold
        /// whole before it can shrink them (AVIF, GIF, interlaced PNG, progressive JPEG) are
        /// refused past it; every other input is shrunk while it is read, a few rows at a time.
        /// Default: 384 MiB, which takes a 24-megapixel progressive photograph and a 12-megapixel
        /// 10-bit AVIF. Before it, a 1.8 KB 12-bit AVIF of 7,071 x 7,071 pixels took 1 GB and
        /// 2.6 s to thumbnail.
        public var maxDecodeMemory: Int
        /// Most frames (pages) an input may declare, read from its header (`n-pages`). Default:
        /// no limit, because `Imaging` decodes the first frame only; an image service that
        /// refuses large animations (as imgproxy caps them) sets it.
        public var maxFrames: Int

        /// Creates limits.
        public init(
            maxPixels: Int = 50_000_000, maxSide: Int = 32_768, maxBytes: Int = 50 * 1024 * 1024,
            maxDecodeMemory: Int = 384 * 1024 * 1024, maxFrames: Int = .max
        ) {
            self.maxPixels = maxPixels
            self.maxSide = maxSide
            self.maxBytes = maxBytes
            self.maxDecodeMemory = maxDecodeMemory
            self.maxFrames = maxFrames
        }

        /// 50 megapixels, 32,768 pixels a side, 50 MB, and 384 MiB to decode.
        public static let `default` = Limits()
    }

    /// The limits every call of this value enforces.
    public var limits: Limits

    /// Creates an image processor enforcing `limits`.
    public init(limits: Limits = .default) {
        self.limits = limits
    }

    /// Starts libvips if it has not been started yet; safe to call from any thread.
    /// - Throws: ``Error/libraryUnavailable(_:)`` when libvips cannot start.
    public static func start() throws(Error) {
        try VipsRuntime.started.get()
    }

    /// The version of the libvips this process runs on, such as "8.18.7": the shared library
    /// loaded at run time, not the headers the package was compiled against.
    public static var libvipsVersion: String {
        let (major, minor, micro) = VipsRuntime.version
        return "\(major).\(minor).\(micro)"
    }

    /// Whether libvips runs its SIMD code paths in this process (after ``start()``): true on
    /// libvips 8.15 and later unless the environment sets `VIPS_NOVECTOR`, false before 8.15.
    public static var isVectorised: Bool {
        (try? start()) != nil && vips_vector_isenabled() != 0
    }
}
