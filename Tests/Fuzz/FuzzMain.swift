import FuzzTargets
#if canImport(Glibc)
import Glibc
#endif

/// `sokuho-fuzz TARGET [libFuzzer options and corpus directories]`: one executable for every fuzz
/// target of FuzzTargets (Toolchain/fuzz builds and runs it).
///
/// Built by Toolchain/fuzz with `-D SOKUHO_FUZZ`, ASan and SanitizerCoverage, and linked with
/// libFuzzer's `fuzzer_no_main` runtime: this main picks the target and hands the rest of the
/// command line to `LLVMFuzzerRunDriver` (`-sanitize=fuzzer` would link libFuzzer's own main, which
/// cannot pick a target, and SwiftPM always links ours). In the ordinary build (no libFuzzer) it
/// replays files or directories through the target instead, which reproduces a finding without
/// sanitizers: `swift run sokuho-fuzz event crash-…`.
@main
struct FuzzMain {
    nonisolated(unsafe) static var selected: FuzzTargets.Target?

    static func main() {
        var arguments = CommandLine.arguments
        guard arguments.count >= 2, let target = FuzzTargets.named(arguments[1]) else {
            let names = FuzzTargets.all.map(\.name).joined(separator: ", ")
            printError("usage: sokuho-fuzz TARGET [libFuzzer options | files…]; targets: \(names)")
            exit(64)
        }
        selected = target
        arguments.remove(at: 1)
        #if SOKUHO_FUZZ
        exit(runLibFuzzer(arguments))
        #else
        var count = 0
        for path in arguments.dropFirst() {
            for file in FuzzTargets.files(at: path) {
                guard let bytes = FuzzTargets.read(file) else { printError("cannot read \(file)"); exit(1) }
                bytes.withUnsafeBytes { target.run($0) }
                count += 1
            }
        }
        print("\(target.name): \(count) inputs ran without a finding")
        #endif
    }

    static func printError(_ line: String) {
        let text = Array((line + "\n").utf8)
        _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    #if SOKUHO_FUZZ
    static func runLibFuzzer(_ arguments: [String]) -> Int32 {
        // libFuzzer keeps argv (it re-reads flags and may re-exec itself): strdup'd, never freed.
        var pointers: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var argc = Int32(arguments.count)
        return pointers.withUnsafeMutableBufferPointer { buffer in
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
            return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                FuzzMain.selected?.run(UnsafeRawBufferPointer(start: data, count: size))
                return 0
            }
        }
    }
    #endif
}

#if SOKUHO_FUZZ
/// libFuzzer's entry for a program with its own main (compiler-rt FuzzerInterface.h).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32
#endif
