// swift-tools-version: 6.2
// libFuzzer targets for every parser of outside input except the HTTP request parser (which has its
// own swiftc-built target in Fuzz/RequestParserFuzz). A separate package so the root package's
// builds never compile it; build it into its own scratch path with the sanitizers (the Makefile's
// `fuzz-parsers` target does):
//   swift build --package-path Fuzz/DCServeFuzz --scratch-path .build-fuzz -c release \
//       -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing --product dcserve-fuzz
// with SWIFT_EXEC=scripts/swiftc-coverage-scope (coverage only on the parsers' modules: see there).
// -enable-testing: the driver reaches internal parsers with `@testable import` (no public API for fuzzing).
// and choose the parser with DCSERVE_FUZZ_MODE (see FuzzModes.swift).
import PackageDescription

let package = Package(
    name: "dcserve-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "dcserve", path: "../.."),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // libzstd itself, the reference of the zstd-differential mode.
        .systemLibrary(name: "CZstdReference", pkgConfig: "libzstd"),
        .executableTarget(
            name: "dcserve-fuzz",
            dependencies: [
                "CZstdReference",
                .product(name: "PortableZstd", package: "dcserve"),
                .product(name: "DictionaryCodec", package: "dcserve"),
                .product(name: "DictionaryTransport", package: "dcserve"),
                .product(name: "DCServe", package: "dcserve"),
                .product(name: "DCServeLab", package: "dcserve"),
                .product(name: "DictionaryClient", package: "dcserve"),
                .product(name: "DictionaryClientSystemCodecs", package: "dcserve"),
                .product(name: "HTTPServer", package: "dcserve"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // The `connection` mode: a server connection over the tests' in-memory transport.
                .product(name: "ByteTransportTesting", package: "dcserve"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
