import Documents
import Foundation

// Feeds any bytes to the document parsers, as XML and as JSON: each must give a DocumentInfo or
// DocumentError.malformed, never crash, hang or leak.
//
// Built for libFuzzer (see Fuzz/README.md), this file is the whole fuzz target. Built plainly, it
// is a small tool that replays files through the same function: `swift run DocumentsFuzzer FILE...`.

func parseEverything(_ data: Data) {
    for name in ["fuzz.xml", "fuzz.json", "fuzz.txt"] {
        do {
            _ = try DocumentInfo(parsing: data, name: name)
        } catch {
            guard case .malformed = error else { fatalError("\(name): not malformed but \(error)") }
        }
    }
}

@main
struct DocumentsFuzzer {
    static func main() throws {
        #if FUZZING
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(
            runLibFuzzer(&argc, &argv) { bytes, count in
                parseEverything(Data(bytes: bytes, count: count))
                return 0
            })
        #else
        for path in CommandLine.arguments.dropFirst() {
            parseEverything(try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        print("replayed \(CommandLine.arguments.count - 1) inputs")
        #endif
    }
}

#if FUZZING
/// libFuzzer's entry point for a program that has a main of its own (SwiftPM gives every
/// executable one).
@_silgen_name("LLVMFuzzerRunDriver")
func runLibFuzzer(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ test: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt
#endif
