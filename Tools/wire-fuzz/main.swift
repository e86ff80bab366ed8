// The wire fuzzer (docs/fuzzing.md): libFuzzer calls this with each input;
// scripts/fuzz.sh builds and runs it. Only the entry point lives here, so
// that libFuzzer's main is the program's main: the decoders it drives are
// the production ones (`WireFuzzing`).
import RunLoopKitPorts

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    WireFuzzing.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
