// Never runs: libFuzzer's main() drives LLVMFuzzerTestOneInput (FuzzModes.swift). SwiftPM renames
// an executable target's entry point, so it does not clash with libFuzzer's.
