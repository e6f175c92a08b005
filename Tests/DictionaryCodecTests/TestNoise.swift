/// `count` bytes that do not repeat within `count` (a simple LCG), so zstd and the dictionary builders
/// find no accidental matches in them.
func noise(_ count: Int, seed: UInt32) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 1_664_525 &+ 1_013_904_223
        return UInt8(truncatingIfNeeded: state >> 24)
    }
}
