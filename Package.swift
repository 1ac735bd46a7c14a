// swift-tools-version: 6.1
import PackageDescription

/// One settings array for every target, tests included: Swift 6 mode, so strict concurrency is on;
/// `MemberImportVisibility`, so a file uses only members of modules it imports itself, and every
/// product a target imports is declared here.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The libvips CVips links, by the pkg-config files scripts/install-libvips writes: by default the
/// pinned 8.18 build (scripts/libvips.pin); with `VIPS=system` in the environment, Debian's
/// libvips (libvips-dev). Neither file names Debian's `vips.pc`, so it never wins silently.
let libvipsPackage = Context.environment["VIPS"] == "system" ? "emojiart-libvips-system" : "emojiart-libvips"

/// The condition on every product that only the app, the gallery server, the command line, the
/// bench and the tests use. The `App` trait is off by default, so a package that depends on this
/// one (a library user of ImageCache) does not resolve the packages only these products come from:
/// Hummingbird, Mustache, Prometheus, swift-metrics, ArgumentParser (async-http-client needs the
/// rest of the group too). This package's own builds turn it on: `--traits App`, as the Makefile
/// and scripts/ pass it.
let app = TargetDependencyCondition.when(traits: ["App"])

let package = Package(
    name: "EmojiArt",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "emojiart", targets: ["emojiart"]),
        .library(name: "ImageCache", targets: ["ImageCache"]),
        .library(name: "HTTPCaching", targets: ["HTTPCaching"]),
        .library(name: "Imaging", targets: ["Imaging"]),
        .library(name: "GalleryFeed", targets: ["GalleryFeed"]),
        // These three need the App trait.
        .library(name: "GalleryServer", targets: ["GalleryServer"]),
        .library(name: "FastLane", targets: ["FastLane"]),
        .library(name: "EmojiArtApp", targets: ["EmojiArtApp"]),
    ],
    traits: [
        .trait(
            name: "App",
            description: "The app, the gallery server, the emojiart command, the bench and the tests, with the packages only they use (Hummingbird, Mustache, Prometheus, swift-metrics, ArgumentParser). Off by default: a library user of ImageCache needs none of it."
        ),
        .default(enabledTraits: []),
    ],
    dependencies: [
        // ImageCache's, and so every library user's (HTTPCaching, GalleryFeed and Imaging have none).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // `ManagedAtomic` of a class reference (Synchronization's `Atomic` holds none): the fast
        // lane's `Date` field, as Hummingbird keeps its own. Already in the graph through SwiftNIO.
        .package(url: "https://github.com/apple/swift-atomics", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // The app's, the gallery's and their tools' only: every product of theirs is under `app`.
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.1.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // `make docs`: the DocC catalogs of ImageCache and Imaging as a static site. A command
        // plugin no target names: SwiftPM resolves it only where this package is the root.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CVips",
            pkgConfig: libvipsPackage
        ),
        .systemLibrary(
            name: "CXXHash",
            pkgConfig: "libxxhash",
            providers: [.apt(["libxxhash-dev"])]
        ),
        .target(
            name: "Imaging",
            dependencies: ["CVips"],
            swiftSettings: swiftSettings
        ),
        // RFC 9110 dates and conditional requests, RFC 9111 Cache-Control and freshness: what the
        // cache reads and the gallery (and the app) answer with, defined once.
        .target(
            name: "HTTPCaching",
            swiftSettings: swiftSettings
        ),
        // imgproxy's signed URLs decoded and checked into a canonical processing plan, and the
        // plan carried out with libvips as an ImageCache processor: issue 49.
        .target(
            name: "ImageService",
            dependencies: [
                "FastLane",
                "HTTPCaching",
                "ImageCache",
                "Imaging",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: app),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics", condition: app),
                .product(name: "CoreMetrics", package: "swift-metrics", condition: app),
                .product(name: "Prometheus", package: "swift-prometheus", condition: app),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Built with `NonisolatedNonsendingByDefault` (the next language mode's rule: a nonisolated
        // async function runs on its caller's actor): what must run off the `ImageDatabase` actor
        // says so with `@concurrent`, and a test shows the actor free while it runs.
        .target(
            name: "ImageCache",
            dependencies: [
                "CXXHash",
                "HTTPCaching",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
        ),
        // The feed's wire types (`ImageFile`), which the gallery writes and the app reads.
        .target(
            name: "GalleryFeed",
            swiftSettings: swiftSettings
        ),
        // RFC 9421 message signatures, RFC 9530 digests and RFC 8037 keys: the gallery signs its
        // feed with them and the app verifies it, with one definition of the wire format.
        .target(
            name: "MessageSignatures",
            dependencies: [
                "HTTPCaching",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers", condition: app),
            ],
            swiftSettings: swiftSettings
        ),
        // Answers memory hits on the event loop, before Hummingbird, and says `nosniff` on every
        // answer Hummingbird's router makes: the app and the gallery use it.
        .target(
            name: "FastLane",
            dependencies: [
                "HTTPCaching",
                .product(name: "Atomics", package: "swift-atomics", condition: app),
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: app),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: app),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: app),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras", condition: app),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "GalleryServer",
            dependencies: [
                "FastLane",
                "GalleryFeed",
                "HTTPCaching",
                "Imaging",
                "MessageSignatures",
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: app),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: app),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: app),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics", condition: app),
                .product(name: "CoreMetrics", package: "swift-metrics", condition: app),
                .product(name: "Prometheus", package: "swift-prometheus", condition: app),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "EmojiArtApp",
            dependencies: [
                "FastLane",
                "ImageService",
                "GalleryFeed",
                "HTTPCaching",
                "ImageCache",
                "Imaging",
                "MessageSignatures",
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: app),
                .product(name: "Mustache", package: "swift-mustache", condition: app),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: app),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus", condition: app),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras", condition: app),
                .product(name: "Clocks", package: "swift-clocks", condition: app),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "emojiart",
            dependencies: [
                "FastLane",
                "HTTPCaching",
                "Imaging",
                "ImageService",
                "MessageSignatures",
                "ImageCache",
                "GalleryServer",
                "EmojiArtApp",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: app),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: app),
                .product(name: "UnixSignals", package: "swift-service-lifecycle", condition: app),
            ],
            swiftSettings: swiftSettings
        ),
        // A child process for the crash-safety test: writes cache entries until it is killed.
        .executableTarget(
            name: "imagecache-crash-writer",
            dependencies: ["ImageCache"],
            path: "Tests/CrashWriter",
            swiftSettings: swiftSettings
        ),
        // `make bench`: our code measured side by side with its anchors.
        .executableTarget(
            name: "emojiart-bench",
            dependencies: [
                "Imaging",
                "ImageCache",
                "GalleryServer",
                "EmojiArtApp",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: app),
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Benchmarks",
            exclude: ["anchors", "network.py"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: app),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HTTPCachingTests",
            dependencies: ["HTTPCaching"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ImageServiceTests",
            dependencies: [
                "FastLane", "HTTPCaching", "ImageCache", "ImageService", "Imaging", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: app),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: app),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "MessageSignaturesTests",
            dependencies: [
                "MessageSignatures",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // LLVM's profile runtime, weakly: PathTraceTests in a build with code coverage (scripts/trace).
        .systemLibrary(name: "CProfile", path: "Tests/CProfile"),
        // zlib, for tests that inflate a PNG's rows (Debian's zlib1g-dev).
        .systemLibrary(name: "CZlib", path: "Tests/CZlib", pkgConfig: "zlib"),
        .testTarget(
            name: "ImagingTests",
            dependencies: ["Imaging", "CZlib"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ImageCacheTests",
            dependencies: [
                "ImageCache", "CXXHash", "HTTPCaching", "TestSupport", "imagecache-crash-writer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "GalleryServerTests",
            dependencies: [
                "FastLane", "GalleryFeed", "GalleryServer", "HTTPCaching", "Imaging", "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: app),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FastLaneTests",
            dependencies: [
                "FastLane", "HTTPCaching", "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: app),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: app),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras", condition: app),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EmojiArtTests",
            dependencies: [
                "EmojiArtApp", "FastLane", "GalleryFeed", "GalleryServer", "HTTPCaching", "ImageCache", "ImageService", "Imaging", "MessageSignatures", "TestSupport", "emojiart", "CProfile",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: app),
                .product(name: "Hummingbird", package: "hummingbird", condition: app),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: app),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: app),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: app),
                .product(name: "Clocks", package: "swift-clocks", condition: app),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
