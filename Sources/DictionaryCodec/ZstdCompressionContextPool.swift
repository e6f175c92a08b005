import CZstd
import Locking

/// Reuses `ZSTD_CCtx` objects across one-shot compressions: a context's tables are megabytes at high
/// levels, and reallocating them per body costs more than compressing a small one.
///
/// Thread-safety: `acquire`/`release` are guarded by a `Locked`; a context is owned by exactly one
/// caller between them. At most `maxIdle` idle contexts are kept; extras are freed.
final class ZstdCompressionContextPool: Sendable {
    static let shared = ZstdCompressionContextPool(maxIdle: 8)

    private struct Context: @unchecked Sendable { let pointer: OpaquePointer }
    private let idle = Locked<[Context]>([])
    private let maxIdle: Int

    init(maxIdle: Int) { self.maxIdle = maxIdle }

    /// A context with default parameters and no dictionary.
    func acquire() throws -> OpaquePointer {
        if let context = idle.withLock({ $0.popLast() }) { return context.pointer }
        guard let cctx = ZSTD_createCCtx() else { throw CodecError.encoderFailure("ZSTD_createCCtx failed") }
        return cctx
    }

    /// Resets `cctx` (parameters and dictionary reference) and keeps it for reuse, or frees it.
    func release(_ cctx: OpaquePointer) {
        ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters)
        let kept = idle.withLock { idle -> Bool in
            guard idle.count < maxIdle else { return false }
            idle.append(Context(pointer: cctx))
            return true
        }
        if !kept { ZSTD_freeCCtx(cctx) }
    }

    /// Frees every idle context (when traffic stops: a level-19 context's tables are megabytes).
    func freeIdle() {
        for context in idle.withLock({ idle -> [Context] in defer { idle = [] }; return idle }) { ZSTD_freeCCtx(context.pointer) }
    }
}

/// Frees the idle zstd compression contexts and encode output buffers kept for reuse (they are made
/// again when needed).
public func releaseIdleZstdContexts() {
    ZstdCompressionContextPool.shared.freeIdle()
    EncodeOutputScratch.shared.freeIdle()
}

/// Throws `CodecError.encoderFailure` for a zstd error code.
func zstdCheck(_ result: Int, _ what: String) throws {
    if ZSTD_isError(result) != 0 {
        throw CodecError.encoderFailure("\(what): \(String(cString: ZSTD_getErrorName(result)))")
    }
}
