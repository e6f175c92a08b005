import Configuration
import Foundation

/// A swift-configuration provider over JSON bytes already in memory: what `FileProvider<JSONSnapshot>`
/// does once it has read its file (same snapshot type, parsing options and provider name), without
/// the file system or `async`. Immutable after `init`; `Sendable`.
struct JSONContentsProvider: ConfigProvider {
    private let snapshotValue: JSONSnapshot

    /// Parses `contents` (a JSON object) with the default parsing options; throws what
    /// `FileProvider<JSONSnapshot>` would throw for a file with these bytes.
    init(contents: Data) throws {
        snapshotValue = try Self.makeSnapshot(contents)
    }

    /// Separate function: Swift 6.2 emits invalid SIL when `data.bytes` goes to a throwing call
    /// directly in an initializer (swiftlang/swift#85280; swift-configuration works around it the same way).
    private static func makeSnapshot(_ data: Data) throws -> JSONSnapshot {
        try JSONSnapshot(data: data.bytes, providerName: "FileProvider<JSONSnapshot>", parsingOptions: .default)
    }

    var providerName: String { snapshotValue.providerName }

    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try snapshotValue.value(forKey: key, type: type)
    }

    nonisolated(nonsending) func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        try value(forKey: key, type: type)
    }

    // swift-configuration builds with NonisolatedNonsendingByDefault: spell its defaults out.
    nonisolated(nonsending) func watchSnapshot<Return: ~Copyable>(
        updatesHandler: nonisolated(nonsending) (_ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>) async throws -> Return
    ) async throws -> Return {
        try await watchSnapshotFromSnapshot(updatesHandler: updatesHandler)
    }

    nonisolated(nonsending) func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler: nonisolated(nonsending) (_ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>) async throws -> Return
    ) async throws -> Return {
        try await watchValueFromValue(forKey: key, type: type, updatesHandler: updatesHandler)
    }

    func snapshot() -> any ConfigSnapshot { snapshotValue }
}
