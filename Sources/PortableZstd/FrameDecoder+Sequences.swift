/// 16 bytes from `src` to `dst` (unaligned); both must have 16 bytes available.
@inline(__always) private func copy16(_ dst: UnsafeMutablePointer<UInt8>, _ src: UnsafePointer<UInt8>) {
    let s = UnsafeRawPointer(src)
    let d = UnsafeMutableRawPointer(dst)
    d.storeBytes(of: s.loadUnaligned(as: UInt64.self), as: UInt64.self)
    d.storeBytes(of: s.loadUnaligned(fromByteOffset: 8, as: UInt64.self), toByteOffset: 8, as: UInt64.self)
}

@inline(__always) private func copy8(_ dst: UnsafeMutablePointer<UInt8>, _ src: UnsafePointer<UInt8>) {
    UnsafeMutableRawPointer(dst).storeBytes(of: UnsafeRawPointer(src).loadUnaligned(as: UInt64.self), as: UInt64.self)
}

extension FrameDecoder {
    /// Decodes `count` sequences from the backward bitstream and executes them (RFC 8878 §3.1.1.3.2,
    /// §3.1.1.4), then appends the remaining literals. Bit reads and reloads happen in the reference
    /// decoder's order so that corrupt streams decode (or fail) as they do there.
    func executeSequences(count: Int, stream: UnsafePointer<UInt8>, streamSize: Int, literalCount: Int)
        throws(ZstdDecodeError)
    {
        var br = try BackwardBitReader(stream, count: streamSize)
        let llCells = literalLengthCells
        let ofCells = offsetCells
        let mlCells = matchLengthCells
        var llState = Int(br.readBits(literalLengthLog))
        br.reload()
        var ofState = Int(br.readBits(offsetLog))
        br.reload()
        var mlState = Int(br.readBits(matchLengthLog))
        br.reload()

        let blockStart = output.count
        // Compressed blocks decode at most blockSizeMax bytes (and never past the output limit).
        let blockEnd = blockStart + min(blockSizeMax, outputLimit - blockStart)
        output.reserve(blockEnd)
        let out = output.base
        var op = blockStart
        let lit = UnsafePointer(literals)
        var litPos = 0
        let historyStart = frameStart
        let dict = dictionary
        let dictCount = dictionaryCount
        var r0 = rep0, r1 = rep1, r2 = rep2
        var left = count

        while true {
            let ll = llCells[llState & 511]
            let of = ofCells[ofState & 511]
            let ml = mlCells[mlState & 511]
            let llBase = Int(truncatingIfNeeded: UInt32(truncatingIfNeeded: ll))
            let ofBase = Int(truncatingIfNeeded: UInt32(truncatingIfNeeded: of))
            var matchLength = Int(truncatingIfNeeded: UInt32(truncatingIfNeeded: ml))
            var literalLength = llBase
            let llBits = UInt32(truncatingIfNeeded: ll >> 32) & 0xFF
            let ofBits = UInt32(truncatingIfNeeded: of >> 32) & 0xFF
            let mlBits = UInt32(truncatingIfNeeded: ml >> 32) & 0xFF

            var offset: Int
            if ofBits > 1 {
                offset = ofBase &+ Int(truncatingIfNeeded: br.readBitsFast(ofBits))
                r2 = r1
                r1 = r0
                r0 = offset
            } else {
                let ll0 = llBase == 0 ? 1 : 0
                if ofBits == 0 {
                    if ll0 == 0 {
                        offset = r0
                    } else {
                        offset = r1
                        r1 = r0
                        r0 = offset
                    }
                } else {
                    let code = ofBase + ll0 + Int(truncatingIfNeeded: br.readBitsFast(1))
                    var value = code == 3 ? r0 &- 1 : (code == 1 ? r1 : r2)
                    if value == 0 { value = 1 }
                    if code != 1 { r2 = r1 }
                    r1 = r0
                    r0 = value
                    offset = value
                }
            }
            if mlBits > 0 { matchLength &+= Int(truncatingIfNeeded: br.readBitsFast(mlBits)) }
            if llBits + mlBits + ofBits >= 31 { br.reload() }  // 57-bit accumulator minus 26 state bits
            if llBits > 0 { literalLength &+= Int(truncatingIfNeeded: br.readBitsFast(llBits)) }
            llState = Int(truncatingIfNeeded: ll >> 48) &+ Int(truncatingIfNeeded: br.readBits(UInt32(truncatingIfNeeded: ll >> 40) & 0xFF))
            mlState = Int(truncatingIfNeeded: ml >> 48) &+ Int(truncatingIfNeeded: br.readBits(UInt32(truncatingIfNeeded: ml >> 40) & 0xFF))
            ofState = Int(truncatingIfNeeded: of >> 48) &+ Int(truncatingIfNeeded: br.readBits(UInt32(truncatingIfNeeded: of >> 40) & 0xFF))

            // Execute: literals, then the match (from this frame's output or the dictionary).
            guard offset >= 1 else { throw .corrupt("zero match offset") }  // unreachable: repeat offsets stay >= 1
            guard literalLength <= blockEnd - op else { throw blockEnd - blockStart < blockSizeMax ? overLimit : .blockTooLarge }
            guard literalLength <= literalCount - litPos else { throw .corrupt("sequence needs more literals than decoded") }
            guard matchLength <= blockEnd - op - literalLength else { throw blockEnd - blockStart < blockSizeMax ? overLimit : .blockTooLarge }
            do {
                var d = out + op
                var s = lit + litPos
                let end = d + literalLength
                while d < end {
                    copy16(d, s)
                    d += 16
                    s += 16
                }
            }
            op += literalLength
            litPos += literalLength
            let history = op - historyStart
            if offset > history {
                guard offset - history <= dictCount else { throw .corrupt("match offset beyond the history") }
                let from = dictCount - (offset - history)
                let fromDictionary = min(matchLength, dictCount - from)
                (out + op).update(from: dict + from, count: fromDictionary)
                op += fromDictionary
                var rest = matchLength - fromDictionary
                var src = historyStart
                while rest > 0 {
                    out[op] = out[src]
                    op += 1
                    src += 1
                    rest -= 1
                }
            } else {
                let d = out + op
                copyMatch(d, from: UnsafePointer(d - offset), offset: offset, length: matchLength)
                op += matchLength
            }

            left -= 1
            if left == 0 { break }
            br.reload()
        }
        guard br.reload().rawValue >= BackwardBitReader.Status.completed.rawValue else {
            throw .corrupt("sequences bitstream not consumed")
        }
        rep0 = r0
        rep1 = r1
        rep2 = r2
        let lastLiterals = literalCount - litPos
        guard lastLiterals <= blockEnd - op else {
            throw blockEnd - blockStart < blockSizeMax ? overLimit : .blockTooLarge
        }
        (out + op).update(from: lit + litPos, count: lastLiterals)
        op += lastLiterals
        output.count = op
    }

    /// Copies `length` (≥ 1) bytes from `offset` bytes back; the output has slack past `d + length`.
    @inline(__always) private func copyMatch(_ d: UnsafeMutablePointer<UInt8>, from s: UnsafePointer<UInt8>, offset: Int,
                                             length: Int)
    {
        let end = d + length
        if offset >= 16 {
            var d = d
            var s = s
            repeat {
                copy16(d, s)
                d += 16
                s += 16
            } while d < end
        } else if offset >= 8 {
            var d = d
            var s = s
            repeat {
                copy8(d, s)
                d += 8
                s += 8
            } while d < end
        } else {
            // Write one period-aligned prefix of at least 8 bytes, then copy 8 bytes at a time from
            // that far back (the pattern repeats every `period` bytes).
            let period = offset * ((8 + offset - 1) / offset)
            var i = 0
            let prefix = min(period, length)
            while i < prefix {
                d[i] = s[i]
                i += 1
            }
            var w = d + prefix
            while w < end {
                copy8(w, UnsafePointer(w - period))
                w += 8
            }
        }
    }
}
