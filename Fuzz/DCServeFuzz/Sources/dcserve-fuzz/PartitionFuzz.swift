@testable import DCServe
import HTTPTypes

// Mode `partition`: the per-user dictionary partition derived from request fields (a configured
// header, or a cookie parsed out of `Cookie`) and from an upstream's response field
// (PartitionID.fromRequest / .cookie / .fromResponse).
//
// Input: the configured name, NUL, then field lines `name:value` (LF-separated).
//
// Invariants: every partition id is "anonymous" or 64 lower-case hex digits (the PostgreSQL store's
// CHECK constraint refuses anything else); equal credentials give equal ids, an empty one the anonymous id; a cookie value found is
// a substring of one `Cookie` field; the upstream's field never stays in the response.

let partitionSecret = Array("fuzz partition secret".utf8)

func isPartitionID(_ id: RequestPartition) -> Bool {
    guard let value = id.storeID else { return id == .ambiguous }  // ambiguous: no id at all
    return value == PartitionID.anonymous.value
        || (value.utf8.count == 64 && value.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) })
}

func fuzzPartition(_ bytes: [UInt8]) {
    let parts = bytes.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
    let name = String(decoding: parts[0], as: UTF8.self)
    var fields = HTTPFields()
    if parts.count > 1 {
        for line in parts[1].split(separator: 0x0A, maxSplits: 15) {
            guard let colon = line.firstIndex(of: 0x3A),
                  let field = HTTPField.Name(String(decoding: line[..<colon], as: UTF8.self)) else { continue }
            fields.append(HTTPField(name: field, value: String(decoding: line[(colon + 1)...], as: UTF8.self)))
        }
    }
    for source in [DictionaryPartitionSource.header(name), .cookie(name)] {
        guard let id = PartitionID.fromRequest(fields, source: source, secret: partitionSecret) else {
            preconditionFailure("no partition for a request source")
        }
        precondition(isPartitionID(id), "partition id \(id)")
        precondition(PartitionID.fromRequest(fields, source: source, secret: partitionSecret) == id)
    }
    let cookies = fields[values: .cookie]
    if let value = PartitionID.cookie(named: name, in: cookies) {
        precondition(value.isEmpty || cookies.contains { $0.contains(value) }, "cookie value \(value) not in the Cookie fields")
        let named = PartitionID.cookies(named: name, in: cookies).count
        let expected: RequestPartition = named > 1 ? .ambiguous
            : value.isEmpty || value == "\"\"" ? .anonymous : .user(PartitionID(secret: partitionSecret, source: .cookie(name), credential: value))
        precondition(PartitionID.fromRequest(fields, source: .cookie(name), secret: partitionSecret) == expected)
    }
    var response = fields
    if let id = PartitionID.fromResponse(&response, source: .upstreamHeader(name), secret: partitionSecret) {
        precondition(isPartitionID(id), "partition id \(id)")
        if let field = HTTPField.Name(name) { precondition(response[field] == nil, "\(name) left in the response") }
    }
}
