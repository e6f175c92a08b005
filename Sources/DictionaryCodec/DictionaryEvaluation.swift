import Foundation
import Locking

/// How much a dictionary saves on held-out responses, computed with dcserve's own encoders
/// (``ContentCoding/encode(_:dictionary:level:)``), exactly as `dcserve serve` would send them.
///
/// For every coding in ``codings`` the total encoded bytes over all held-out responses (dcb/dcz
/// include their 36/40-byte headers) and the percentage saved against identity. The dictionary's own
/// transfer cost is its size as br-11 (what a server would send it as); the break-even point is the
/// number of responses after which dictionary coding plus that one-time cost beats the plain coding
/// of the same family (dcz-19 vs zstd-19, dcb-11 vs br-11). A value type.
public struct DictionaryEvaluation: Sendable {
    /// One coding at one level.
    public struct Setting: Sendable, Hashable, CustomStringConvertible {
        public let coding: ContentCoding
        public let level: Int
        public var description: String { "\(coding)-\(level)" }
    }

    /// One row of the report.
    public struct Measurement: Sendable {
        public let setting: Setting
        public let bytes: Int
        /// Percentage of identity bytes saved (0...100).
        public let savedPercent: Double
    }

    /// Break-even of a dictionary coding against its plain counterpart.
    public struct BreakEven: Sendable {
        public let dictionaryCoding: Setting
        public let plainCoding: Setting
        /// Average bytes saved per response; may be negative.
        public let savedPerResponse: Double
        /// Responses needed to pay for the dictionary transfer; nil when the dictionary never pays.
        public let responses: Int?
    }

    public static let codings: [Setting] = [
        Setting(coding: .gzip, level: 6), Setting(coding: .br, level: 11), Setting(coding: .zstd, level: 19),
        Setting(coding: .dcb, level: 5), Setting(coding: .dcb, level: 11),
        Setting(coding: .dcz, level: 3), Setting(coding: .dcz, level: 19),
    ]

    public let responses: Int
    public let identityBytes: Int
    public let measurements: [Measurement]
    public let dictionarySize: Int
    /// The dictionary compressed with br-11.
    public let dictionaryTransferBytes: Int
    public let breakEven: [BreakEven]

    /// Evaluates `dictionary` on `samples`. Codings run on up to `concurrency` threads; results do not
    /// depend on it. `progress` (if any) advances per coding finished.
    public static func evaluate(
        dictionary bytes: [UInt8], samples: [[UInt8]], concurrency: Int = 2, progress: TrainingProgress? = nil
    ) throws -> DictionaryEvaluation {
        let dictionary = CompressionDictionary(bytes: bytes)
        let settings = codings
        let results = ResultSlots<Int>(count: settings.count)
        let group = DispatchGroup()
        let queue = DispatchQueue(label: "dcserve.evaluation", attributes: .concurrent)
        let gate = DispatchSemaphore(value: max(1, concurrency))
        for (i, setting) in settings.enumerated() {
            gate.wait()
            queue.async(group: group) {
                defer { gate.signal() }
                do {
                    var total = 0
                    for sample in samples {
                        total += try setting.coding.encode(
                            sample, dictionary: setting.coding.usesDictionary ? dictionary : nil, level: setting.level
                        ).count
                    }
                    results.set(i, .success(total))
                } catch {
                    results.set(i, .failure(error))
                }
                progress?.advance(to: results.completedFraction)
            }
        }
        group.wait()
        let identity = samples.reduce(0) { $0 + $1.count }
        var measurements: [Measurement] = []
        for (i, setting) in settings.enumerated() {
            let total = try results.get(i)
            let saved = identity > 0 ? 100 * (1 - Double(total) / Double(identity)) : 0
            measurements.append(Measurement(setting: setting, bytes: total, savedPercent: saved))
        }
        let transfer = try Brotli.encode(bytes, level: 11).count
        func bytesOf(_ coding: ContentCoding, _ level: Int) -> Int {
            measurements.first { $0.setting.coding == coding && $0.setting.level == level }!.bytes
        }
        var breakEven: [BreakEven] = []
        for (dc, dl, pc, pl) in [(ContentCoding.dcz, 19, ContentCoding.zstd, 19), (.dcb, 11, .br, 11)] {
            let perResponse = samples.isEmpty ? 0 : Double(bytesOf(pc, pl) - bytesOf(dc, dl)) / Double(samples.count)
            let responses = perResponse > 0 ? Int((Double(transfer) / perResponse).rounded(.up)) : nil
            breakEven.append(BreakEven(
                dictionaryCoding: Setting(coding: dc, level: dl), plainCoding: Setting(coding: pc, level: pl),
                savedPerResponse: perResponse, responses: responses))
        }
        return DictionaryEvaluation(
            responses: samples.count, identityBytes: identity, measurements: measurements, dictionarySize: bytes.count,
            dictionaryTransferBytes: transfer, breakEven: breakEven)
    }

    /// The measurement for `coding` at `level`, if it was measured.
    public func measurement(_ coding: ContentCoding, level: Int) -> Measurement? {
        measurements.first { $0.setting.coding == coding && $0.setting.level == level }
    }
}

/// Results written by worker threads (lock-protected), read after they finished.
final class ResultSlots<Value: Sendable>: Sendable {
    private let slots: Locked<[Result<Value, any Error>?]>

    init(count: Int) { slots = Locked(Array(repeating: nil, count: count)) }

    func set(_ i: Int, _ value: Result<Value, any Error>) { slots.withLock { $0[i] = value } }

    func get(_ i: Int) throws -> Value { try slots.withLock { $0[i]! }.get() }

    var completedFraction: Double {
        slots.withLock { slots in Double(slots.count { $0 != nil }) / Double(max(1, slots.count)) }
    }
}
