// swift-tools-version: 5.10
// bench/sqlite-choice: the same SQLite work through GRDB and through libsqlite3 directly (see ./run).
import PackageDescription
let package = Package(
    name: "sqlbench",
    dependencies: [.package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0")],
    targets: [
        .systemLibrary(name: "CSQLiteShim", pkgConfig: "sqlite3"),
        .executableTarget(name: "BenchRaw", dependencies: ["CSQLiteShim"]),
        .executableTarget(name: "BenchGRDB", dependencies: [.product(name: "GRDB", package: "GRDB.swift")]),
    ]
)
