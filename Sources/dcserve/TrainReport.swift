import DictionaryCodec
import Foundation

/// The result of `dcserve train` as a human-readable table or JSON, with the configuration snippet
/// and `Link` header that advertise the dictionary. A value type; formatting only.
struct TrainReport {
    let output: String
    let hash: DictionaryHash
    let result: TrainingResult
    let evaluation: DictionaryEvaluation
    let truncated: [String]
    let trainingSeconds: Double
    let evaluationSeconds: Double
    let storedAt: String?
    let name: String
    let match: String?
    let matchDest: [String]
    let id: String?
    let seed: UInt64
    let effort: TrainingEffort

    var dictionaryPath: String { "/dictionaries/\(name).dict" }
    var linkHeader: String { "Link: <\(dictionaryPath)>; rel=\"compression-dictionary\"" }

    /// The `outOfBand` section for `Config/dcserve.json`.
    var configSnippet: [String: Any] {
        var entry: [String: Any] = ["file": output, "path": dictionaryPath, "match": match ?? "/*",
                                    "advertiseOn": match ?? "/*", "maxAge": 86400]
        if !matchDest.isEmpty { entry["matchDest"] = matchDest }
        if let id { entry["id"] = id }
        return ["outOfBand": ["names": [name], name: entry]]
    }

    func text() -> String {
        let split = result.split
        var lines: [String] = []
        lines.append("dictionary  \(output)  \(result.dictionary.count) bytes  sha256 \(hash.hex)")
        lines.append("            Available-Dictionary: \(hash.structuredFieldBinary)")
        lines.append("chosen      \(result.chosen.method) (\(result.chosen.detail)); effort \(effort.rawValue), seed \(seed)")
        lines.append("samples     \(split.training.count) training, \(split.validation.count) validation, \(split.heldOut.count) held-out"
            + (split.skippedTiny.isEmpty ? "" : "; \(split.skippedTiny.count) skipped (< 32 bytes)")
            + (truncated.isEmpty ? "" : "; \(truncated.count) truncated to 32 MiB")
            + "; \(result.trainingBuffer.pieces) training pieces (\(result.trainingBuffer.splitSamples) samples split at 128 KiB)")
        if let rebuilt = result.rebuiltFromSamples {
            lines.append("            final dictionary: the chosen method built again from \(rebuilt) samples (training + validation)"
                + (result.mergedWithChosen ? ", cut together with the validated candidate by their votes" : ""))
        }
        lines.append("")
        lines.append("candidates (validation, dcz-\(result.selectionLevel) bytes; no dictionary: \(result.validationBytesWithoutDictionary))")
        for c in result.candidates {
            let mark = c.isSame(as: result.chosen) ? "*" : " "
            lines.append(" \(mark) \(pad(c.method, 14)) \(pad(String(c.validationBytes), 10, right: true))  \(c.detail)")
        }
        lines.append("")
        if evaluation.responses == 0 {
            lines.append("held-out evaluation: none (--held-out 0); measure the dictionary on pages you kept out")
        }
        lines.append("held-out evaluation: \(evaluation.responses) responses, \(evaluation.identityBytes) bytes uncompressed")
        lines.append("  \(pad("coding", 8)) \(pad("bytes", 12, right: true)) \(pad("saved", 8, right: true))")
        for m in evaluation.measurements {
            lines.append("  \(pad(m.setting.description, 8)) \(pad(String(m.bytes), 12, right: true)) \(pad(String(format: "%.2f%%", m.savedPercent), 8, right: true))")
        }
        lines.append("dictionary transfer cost: \(evaluation.dictionaryTransferBytes) bytes (br-11 of \(evaluation.dictionarySize))")
        for b in evaluation.breakEven {
            let when = b.responses.map { "pays for itself after \($0) responses" } ?? "never pays for itself on these samples"
            lines.append("  \(b.dictionaryCoding) vs \(b.plainCoding): \(String(format: "%.0f", b.savedPerResponse)) bytes saved per response; \(when)")
        }
        lines.append("time: training \(String(format: "%.1f", trainingSeconds)) s, evaluation \(String(format: "%.1f", evaluationSeconds)) s")
        lines.append("")
        if let storedAt { lines.append("stored      \(storedAt)") }
        lines.append("configuration (Config/dcserve.json):")
        lines.append(Self.jsonText(configSnippet))
        lines.append("advertise with:")
        lines.append("  \(linkHeader)")
        return lines.joined(separator: "\n")
    }

    func json() throws -> String {
        let split = result.split
        let object: [String: Any] = [
            "dictionary": [
                "path": output, "bytes": result.dictionary.count, "sha256": hash.hex,
                "availableDictionary": hash.structuredFieldBinary, "method": result.chosen.method,
                "parameters": result.chosen.detail, "stored": storedAt as Any,
            ],
            "samples": [
                "training": split.training.count, "validation": split.validation.count, "heldOut": split.heldOut.count,
                "heldOutNames": split.heldOut.map(\.name), "skippedTiny": split.skippedTiny, "truncated": truncated,
                "trainingPieces": result.trainingBuffer.pieces, "trainingBytes": result.trainingBuffer.bytes,
                "splitSamples": result.trainingBuffer.splitSamples,
                "rebuiltFrom": result.rebuiltFromSamples as Any, "mergedWithChosen": result.mergedWithChosen,
            ],
            "candidates": result.candidates.map {
                ["method": $0.method, "parameters": $0.detail, "bytes": $0.bytes.count, "validationBytes": $0.validationBytes,
                 "seconds": $0.seconds, "chosen": $0.isSame(as: result.chosen)] as [String: Any]
            },
            "validationBytesWithoutDictionary": result.validationBytesWithoutDictionary,
            "selectionLevel": result.selectionLevel,
            "evaluation": [
                "responses": evaluation.responses, "identityBytes": evaluation.identityBytes,
                "codings": evaluation.measurements.map {
                    ["coding": $0.setting.description, "bytes": $0.bytes, "savedPercent": $0.savedPercent] as [String: Any]
                },
                "dictionaryTransferBytes": evaluation.dictionaryTransferBytes,
                "breakEven": evaluation.breakEven.map {
                    ["coding": $0.dictionaryCoding.description, "versus": $0.plainCoding.description,
                     "savedPerResponse": $0.savedPerResponse, "responses": $0.responses as Any] as [String: Any]
                },
            ],
            "seed": seed, "effort": effort.rawValue,
            "seconds": ["training": trainingSeconds, "evaluation": evaluationSeconds, "rebuild": result.rebuildSeconds],
            "config": configSnippet, "link": linkHeader,
        ]
        return Self.jsonText(object)
    }

    static func jsonText(_ object: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    private func pad(_ s: String, _ width: Int, right: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - s.count))
        return right ? fill + s : s + fill
    }
}
