/// XXH64 (seed 0), the hash behind zstd's content checksum. Streaming: `update` any number of
/// times, then `digest`. A value type; not shared between threads.
struct XXH64 {
    private static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    private var v1: UInt64 = p1 &+ p2
    private var v2: UInt64 = p2
    private var v3: UInt64 = 0
    private var v4: UInt64 = 0 &- p1
    private var total: UInt64 = 0
    private var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var buffered = 0

    @inline(__always) private static func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
        let a = acc &+ input &* p2
        return ((a << 31) | (a >> 33)) &* p1
    }

    @inline(__always) private static func merge(_ acc: UInt64, _ v: UInt64) -> UInt64 {
        let a = acc ^ round(0, v)
        return a &* p1 &+ p4
    }

    @inline(__always) private static func load64(_ p: UnsafeRawPointer) -> UInt64 {
        UInt64(littleEndian: p.loadUnaligned(as: UInt64.self))
    }

    @inline(__always) private static func load32(_ p: UnsafeRawPointer) -> UInt64 {
        UInt64(UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)))
    }

    mutating func update(_ data: UnsafeRawBufferPointer) {
        guard let base = data.baseAddress, data.count > 0 else { return }
        var p = base
        var remaining = data.count
        total &+= UInt64(remaining)
        if buffered > 0 {
            withUnsafeMutableBytes(of: &buffer) { b in
                let take = min(32 - buffered, remaining)
                b.baseAddress!.advanced(by: buffered).copyMemory(from: p, byteCount: take)
                buffered += take
                p += take
                remaining -= take
            }
            guard buffered == 32 else { return }
            withUnsafeBytes(of: &buffer) { b in
                let q = b.baseAddress!
                v1 = Self.round(v1, Self.load64(q))
                v2 = Self.round(v2, Self.load64(q + 8))
                v3 = Self.round(v3, Self.load64(q + 16))
                v4 = Self.round(v4, Self.load64(q + 24))
            }
            buffered = 0
        }
        var a = v1, b = v2, c = v3, d = v4
        while remaining >= 32 {
            a = Self.round(a, Self.load64(p))
            b = Self.round(b, Self.load64(p + 8))
            c = Self.round(c, Self.load64(p + 16))
            d = Self.round(d, Self.load64(p + 24))
            p += 32
            remaining -= 32
        }
        v1 = a; v2 = b; v3 = c; v4 = d
        if remaining > 0 {
            withUnsafeMutableBytes(of: &buffer) { b in
                b.baseAddress!.copyMemory(from: p, byteCount: remaining)
            }
            buffered = remaining
        }
    }

    func digest() -> UInt64 {
        var h: UInt64
        if total >= 32 {
            h = ((v1 << 1) | (v1 >> 63)) &+ ((v2 << 7) | (v2 >> 57)) &+ ((v3 << 12) | (v3 >> 52))
                &+ ((v4 << 18) | (v4 >> 46))
            h = Self.merge(h, v1)
            h = Self.merge(h, v2)
            h = Self.merge(h, v3)
            h = Self.merge(h, v4)
        } else {
            h = v3 &+ Self.p5
        }
        h &+= total
        var copy = buffer
        let count = buffered
        withUnsafeBytes(of: &copy) { b in
            let q = b.baseAddress!
            var i = 0
            while i + 8 <= count {
                let k = Self.round(0, Self.load64(q + i))
                h ^= k
                h = ((h << 27) | (h >> 37)) &* Self.p1 &+ Self.p4
                i += 8
            }
            if i + 4 <= count {
                h ^= Self.load32(q + i) &* Self.p1
                h = ((h << 23) | (h >> 41)) &* Self.p2 &+ Self.p3
                i += 4
            }
            while i < count {
                h ^= UInt64(q.load(fromByteOffset: i, as: UInt8.self)) &* Self.p5
                h = ((h << 11) | (h >> 53)) &* Self.p1
                i += 1
            }
        }
        h ^= h >> 33
        h &*= Self.p2
        h ^= h >> 29
        h &*= Self.p3
        h ^= h >> 32
        return h
    }
}
