// swift-tools-version: 6.2
// dcserve — a shared-dictionary compression HTTP server (RFC 9842).
//
// Build through the Makefile (`make build`, `make test`): it installs the system libraries, builds
// brotli >= 1.1 into .deps/brotli and points PKG_CONFIG_PATH at it. A plain `swift build` without
// that environment stops with an #error from CBrotli's shim naming the fix.
//
// The app-facing products (DictionaryClient, DictionaryClientURLSession) need none of that: their
// closure is Swift, Foundation, swift-http-types, swift-http-structured-headers, swift-crypto and
// PortableZstd (checked by Tests/integration/test_client_closure.py). An app adds this package and
// links only those products; SwiftPM then builds no system-library target.
import PackageDescription

/// ThreadSanitizer builds set DCSERVE_TSAN_LOCKS=1: `Locked` is then an NSLock-based class TSan sees (see
/// Sources/Locking). Build that variant in a scratch path of its own (`--scratch-path .build-tsan`): flipping
/// it in one build folder leaves objects compiled against the other layout (an incremental build does not
/// recompile every user of a type that merely contains a `Locked`).
let tsanLocks = Context.environment["DCSERVE_TSAN_LOCKS"] == "1"

let package = Package(
    name: "dcserve",
    // The server targets are Linux-only in practice; the client products build on every platform listed.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "dcserve", targets: ["dcserve"]),
        .library(name: "DictionaryCodec", targets: ["DictionaryCodec"]),
        .library(name: "HTTPCore", targets: ["HTTPCore"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "HTTPClient", targets: ["HTTPClient"]),
        .library(name: "DictionaryTransport", targets: ["DictionaryTransport"]),
        .library(name: "DCServe", targets: ["DCServe"]),
        .library(name: "DictionaryStorePostgres", targets: ["DictionaryStorePostgres"]),
        .library(name: "DictionaryStoreSQLite", targets: ["DictionaryStoreSQLite"]),
        // The app's client: portable core, URLSession integration (every platform), AsyncHTTPClient
        // adapter (server-side Swift, Linux apps), system-library decoders (dcb/br/gzip; Linux).
        .library(name: "DictionaryClient", targets: ["DictionaryClient"]),
        .library(name: "DictionaryClientURLSession", targets: ["DictionaryClientURLSession"]),
        .library(name: "DictionaryClientAsyncHTTPClient", targets: ["DictionaryClientAsyncHTTPClient"]),
        .library(name: "DictionaryClientSystemCodecs", targets: ["DictionaryClientSystemCodecs"]),
        // Pure-Swift zstd/dcz decoder: no dependencies, no C.
        .library(name: "PortableZstd", targets: ["PortableZstd"]),
        // The lab (a product so the parser fuzzer in Fuzz/DCServeFuzz can link it).
        .library(name: "DCServeLab", targets: ["DCServeLab"]),
        .library(name: "DCServeEstimate", targets: ["DCServeEstimate"]),
        // Test support, not production: the in-memory byte transport, a product so the connection
        // fuzzer in Fuzz/DCServeFuzz can drive a server connection over it as the unit tests do.
        .library(name: "ByteTransportTesting", targets: ["ByteTransportTesting"]),
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
        // The client's SHA-256 (CryptoKit on Apple platforms).
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // The client's adapter for server-side Swift.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The embedded single-instance dictionary store (SQLite through GRDB, on Debian's libsqlite3).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // System-library shims. Link flags come from pkg-config only (no `link` lines in the maps).
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CBrotli", pkgConfig: "dcserve-brotli"),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CLinux"),

        // The one lock type (`Locked`): Synchronization.Mutex, or, when the package is built with
        // DCSERVE_TSAN_LOCKS=1 in the environment (ThreadSanitizer runs), an NSLock TSan sees.
        .target(name: "Locking", swiftSettings: tsanLocks ? [.define("DCSERVE_TSAN_LOCKS")] : []),

        // Portable pieces shared by the server and the client (Swift and Foundation only):
        // HTTP field-value splitting and HTTP dates; the dictionary-coding vocabulary (hash, coding
        // tokens, dcb/dcz header, limits, errors); the RFC 9842 field models and URL patterns.
        .target(name: "HTTPFieldValues"),
        .target(name: "DictionaryCodecTypes"),
        .target(
            name: "DictionaryTransportFields",
            dependencies: [
                "Locking",
                "DictionaryCodecTypes",
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),

        .target(
            name: "DictionaryCodec",
            dependencies: ["Locking", "DictionaryCodecTypes", "CZstd", "CBrotli", "COpenSSL", "CZlib"]
        ),
        // Zstandard (RFC 8878) and dcz (RFC 9842 §5) decoding in Swift only, for clients without libzstd.
        .target(name: "PortableZstd"),
        // Event loops, sockets, byte transports (TCP, TLS server and client), HTTP/1 framing pieces:
        // what the server and the upstream client share.
        .target(
            name: "HTTPCore",
            dependencies: [
                "Locking",
                "HTTPFieldValues",
                "COpenSSL",
                "CLinux",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HTTPServer",
            dependencies: [
                "Locking",
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
                "Locking",
                "HTTPCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "DictionaryTransport",
            dependencies: [
                "Locking",
                "DictionaryTransportFields",
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
                "Locking",
                "DictionaryTransport",
                "DictionaryCodec",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // The embedded SQLite dictionary store (one file, WAL, batched writes); keeps GRDB out of
        // DictionaryTransport.
        .target(
            name: "DictionaryStoreSQLite",
            dependencies: [
                "Locking",
                "DictionaryTransport",
                "DictionaryCodec",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),  // sqlite3_memory_used
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "DCServe",
            dependencies: [
                "Locking",
                "DictionaryStoreSQLite",
                "CLinux",  // malloc_trim when idle
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
        // The client half of RFC 9842: portable (no system library, no C target, no HTTPCore); never
        // depends on the server.
        .target(
            name: "DictionaryClient",
            dependencies: [
                "Locking",
                "HTTPFieldValues",
                "DictionaryCodecTypes",
                "DictionaryTransportFields",
                "PortableZstd",
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "DictionaryClientURLSession",
            dependencies: [
                "Locking",
                "DictionaryClient",
                "DictionaryTransportFields",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "DictionaryClientAsyncHTTPClient",
            dependencies: [
                "DictionaryClient",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // dcb/br/gzip (and dcz/zstd) through DictionaryCodec's system libraries, for Linux and `dcserve fetch`.
        .target(
            name: "DictionaryClientSystemCodecs",
            dependencies: ["Locking", "DictionaryClient", "DictionaryCodec", "DictionaryTransportFields"]
        ),
        // Drives the client end to end against a running dcserve (Tests/integration/test_client_end_to_end.py).
        .executableTarget(
            name: "dictionary-client-e2e",
            dependencies: [
                "DictionaryClient",
                "DictionaryClientURLSession",
                "DictionaryClientAsyncHTTPClient",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tests/DictionaryClientEndToEnd"
        ),
        // The RFC 9842 client conformance lab (issue #18 items 3–4): scenarios, plan, grading, pages.
        .target(
            name: "DCServeLab",
            dependencies: [
                "Locking",
                "HTTPServer",
                "DictionaryCodec",
                "DictionaryTransport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // `dcserve estimate`: a recorded session (HAR) replayed through an in-process dcserve (issue #37).
        .target(
            name: "DCServeEstimate",
            dependencies: [
                "Locking",
                "DCServe",
                "DictionaryClient",
                "DictionaryClientSystemCodecs",
                "DictionaryCodec",
                "DictionaryTransport",
                "HTTPServer",
                "HTTPClient",
                "HTTPCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "proxy-floor",
            dependencies: ["HTTPServer", "HTTPClient", "HTTPCore", .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Logging", package: "swift-log")]
        ),
        .executableTarget(
            name: "dcserve",
            dependencies: [
                "Locking",
                "DCServe",
                "DictionaryStoreSQLite",  // train --store
                "DCServeLab",
                "DCServeEstimate",
                "HTTPServer",
                "DictionaryCodec",
                "DictionaryTransport",
                "DictionaryClient",
                "PortableZstd",
                "DictionaryClientSystemCodecs",
                "HTTPClient",
                "HTTPCore",
                "COpenSSL",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Shared by the test targets: a seeded generator, temporary directories, field and request builders.
        .target(name: "TestSupport", dependencies: ["Locking", .product(name: "HTTPTypes", package: "swift-http-types")], path: "Tests/TestSupport"),
        .testTarget(
            name: "DictionaryCodecTests",
            dependencies: [
                "DictionaryCodec", "TestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        // An in-memory ByteTransport whose peer is the test (HTTPServerTests, the connection fuzzer).
        .target(name: "ByteTransportTesting", dependencies: ["Locking", "HTTPCore"], path: "Tests/ByteTransportTesting"),
        // Throwaway certificates (openssl CLI) for the TLS tests of several test targets.
        .target(name: "TestPKI", path: "Tests/TestPKI"),
        .testTarget(name: "HTTPCoreTests", dependencies: ["HTTPCore", "TestPKI", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestPKI", "TestSupport", "ByteTransportTesting"]),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "HTTPCore", "TestPKI", "TestSupport"]),
        .testTarget(
            name: "DictionaryTransportTests",
            dependencies: [
                "DictionaryTransport", "TestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(name: "DCServeTests", dependencies: [
            "DCServe", "HTTPClient", "HTTPCore", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        .testTarget(name: "DictionaryStorePostgresTests", dependencies: ["DictionaryStorePostgres", "TestSupport"]),
        .testTarget(name: "DictionaryStoreSQLiteTests", dependencies: [
            "DictionaryStoreSQLite", "DictionaryTransport", "DictionaryCodec", "TestSupport",
            .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "DCServeLabTests", dependencies: [
            "DCServeLab", "DictionaryCodec", "HTTPServer", .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        .testTarget(name: "DictionaryClientTests", dependencies: [
            "DictionaryClient", "DictionaryClientSystemCodecs", "DictionaryCodec", "DictionaryTransport", "TestSupport",
        ]),
        // DictionaryCodec (libzstd) is the reference the pure-Swift decoder is compared with.
        .testTarget(name: "PortableZstdTests", dependencies: ["PortableZstd", "DictionaryCodec", "TestSupport"]),
        .testTarget(name: "DCServeEstimateTests", dependencies: ["DCServeEstimate", "DCServe", "DictionaryCodec"]),
    ],
    swiftLanguageModes: [.v6]
)
