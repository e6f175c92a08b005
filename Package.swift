// swift-tools-version: 6.2
// dcserve — a shared-dictionary compression HTTP server (RFC 9842).
//
// Build through the Makefile (`make build`, `make test`): it installs the system libraries, builds
// brotli >= 1.1 into .deps/brotli and points PKG_CONFIG_PATH at it. A plain `swift build` without
// that environment stops with an #error from CBrotli's shim naming the fix.
import PackageDescription

let package = Package(
    name: "dcserve",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "dcserve", targets: ["dcserve"]),
        .library(name: "DictionaryCodec", targets: ["DictionaryCodec"]),
        .library(name: "HTTPCore", targets: ["HTTPCore"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "HTTPClient", targets: ["HTTPClient"]),
        .library(name: "DictionaryTransport", targets: ["DictionaryTransport"]),
        .library(name: "DCServe", targets: ["DCServe"]),
        .library(name: "DictionaryStorePostgres", targets: ["DictionaryStorePostgres"]),
        .library(name: "DictionaryClient", targets: ["DictionaryClient"]),
        // Pure-Swift zstd/dcz decoder: no dependencies, no C.
        .library(name: "PortableZstd", targets: ["PortableZstd"]),
        // The lab (a product so the parser fuzzer in Fuzz/DCServeFuzz can link it).
        .library(name: "DCServeLab", targets: ["DCServeLab"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // Shared dictionary store (issue #15).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // System-library shims. Link flags come from pkg-config only (no `link` lines in the maps).
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CBrotli", pkgConfig: "dcserve-brotli"),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CLinux"),

        .target(
            name: "DictionaryCodec",
            dependencies: ["CZstd", "CBrotli", "COpenSSL", "CZlib"]
        ),
        // Zstandard (RFC 8878) and dcz (RFC 9842 §5) decoding in Swift only, for clients without libzstd.
        .target(name: "PortableZstd"),
        // Event loops, sockets, byte transports (TCP, TLS server and client), HTTP/1 framing pieces:
        // what the server and the upstream client share.
        .target(
            name: "HTTPCore",
            dependencies: [
                "COpenSSL",
                "CLinux",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HTTPServer",
            dependencies: [
                "HTTPCore",
                "COpenSSL",
                "CLinux",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The upstream HTTP/1.1 client on HTTPCore's event loops (pool, timeouts, retry, round robin).
        .target(
            name: "HTTPClient",
            dependencies: [
                "HTTPCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "DictionaryTransport",
            dependencies: [
                "DictionaryCodec",
                "HTTPCore",  // FieldValueMembers: field values split at separator bytes, as the wire has them
                .product(name: "StructuredFieldValues", package: "swift-http-structured-headers"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // PostgreSQL dictionary store and the tiered (local cache + shared) store; keeps NIO out of
        // DictionaryTransport.
        .target(
            name: "DictionaryStorePostgres",
            dependencies: [
                "DictionaryTransport",
                "DictionaryCodec",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "DCServe",
            dependencies: [
                "HTTPServer",
                "HTTPClient",
                "HTTPCore",
                "DictionaryTransport",
                "DictionaryStorePostgres",
                "DictionaryCodec",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // dclient: the client half of RFC 9842 (issue #17); never depends on the server.
        .target(
            name: "DictionaryClient",
            dependencies: [
                "HTTPCore",  // HTTPDate only: the fuzzed byte parser, not Foundation's DateFormatter
                "DictionaryCodec",
                "DictionaryTransport",
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The RFC 9842 client conformance lab (issue #18 items 3–4): scenarios, plan, grading, pages.
        .target(
            name: "DCServeLab",
            dependencies: [
                "HTTPServer",
                "DictionaryCodec",
                "DictionaryTransport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(
            name: "dcserve",
            dependencies: [
                "DCServe",
                "DCServeLab",
                "HTTPServer",
                "DictionaryCodec",
                "DictionaryTransport",
                "DictionaryClient",
                "PortableZstd",
                "HTTPClient",
                "HTTPCore",
                "COpenSSL",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .testTarget(
            name: "DictionaryCodecTests",
            dependencies: [
                "DictionaryCodec",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        // Throwaway certificates (openssl CLI) for the TLS tests of several test targets.
        .target(name: "TestPKI", path: "Tests/TestPKI"),
        .testTarget(name: "HTTPCoreTests", dependencies: ["HTTPCore", "TestPKI"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestPKI"]),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "HTTPCore", "TestPKI"]),
        .testTarget(
            name: "DictionaryTransportTests",
            dependencies: [
                "DictionaryTransport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(name: "DCServeTests", dependencies: [
            "DCServe", "HTTPClient", "HTTPCore", .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        .testTarget(name: "DictionaryStorePostgresTests", dependencies: ["DictionaryStorePostgres"]),
        .testTarget(name: "DCServeLabTests", dependencies: [
            "DCServeLab", "DictionaryCodec", "HTTPServer", .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        .testTarget(name: "DictionaryClientTests", dependencies: ["DictionaryClient", "DictionaryCodec", "DictionaryTransport"]),
        // DictionaryCodec (libzstd) is the reference the pure-Swift decoder is compared with.
        .testTarget(name: "PortableZstdTests", dependencies: ["PortableZstd", "DictionaryCodec"]),
    ],
    swiftLanguageModes: [.v6]
)
