// Recipe 1 of README.md, "Using RunLoopKit beside Foundation": module
// selectors. `Module::Name` names a declaration of that module and nothing
// else; Swift 6.3 accepts it without any flag (SE-0491). It works with or
// without the typealiases of RunLoopKitNames.swift (this target has both, to
// prove that they coexist).
//
// Older compilers cannot parse `::`; inside an inactive `#if compiler(...)`
// block they do not try, so the package still builds with Swift 6.0 to 6.2.
#if compiler(>=6.3)
import Foundation
import RunLoopKit

struct Reading: Codable, Equatable {
    var sensor: String
    var celsius: Double
}

/// A RunLoopKit timer on RunLoopKit's main loop writes a Foundation-encoded
/// JSON file; the loop is run until the timer has fired.
func moduleSelectorsDemo() throws {
    let loop: RunLoopKit::RunLoop = RunLoopKit::RunLoop.main
    let file: URL = FileManager.default.temporaryDirectory
        .appendingPathComponent("runloopkit-interop-\(ProcessInfo.processInfo.processIdentifier).json")
    let timer = try RunLoopKit::Timer(timeInterval: 0.05, repeats: false) { _ in
        do {
            try JSONEncoder().encode(Reading(sensor: "t1", celsius: 21.5)).write(to: file)
        } catch {
            print("  could not write \(file.path): \(error)")
        }
    }
    loop.add(timer, forMode: .default)
    let result: RunLoopKit::RunLoop.RunResult = loop.run(mode: .default, seconds: 2)

    let reading = try JSONDecoder().decode(Reading.self, from: Data(contentsOf: file))
    try FileManager.default.removeItem(at: file)
    print("  RunLoopKit::RunLoop is \(String(reflecting: RunLoopKit::RunLoop.self)), RunLoopKit::Timer is \(String(reflecting: RunLoopKit::Timer.self))")
    print("  Foundation::RunLoop is \(String(reflecting: Foundation::RunLoop.self)), Foundation::Timer is \(String(reflecting: Foundation::Timer.self))")
    print("  a RunLoopKit timer wrote \(file.lastPathComponent) with Foundation's JSONEncoder; run returned .\(result)")
    print("  read back with JSONDecoder: \(reading)")
}
#endif
