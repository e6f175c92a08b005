#if canImport(Glibc)
import Glibc
#endif

// SwiftPM links an executable target with `--defsym main=<module>_main`, which replaces libFuzzer's
// own main(): hand control to libFuzzer's driver explicitly (same command line, same behaviour).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    var empty: UInt8 = 0
    return data.map { fuzzOneInput($0, size) } ?? withUnsafePointer(to: &empty) { fuzzOneInput($0, 0) }
})
