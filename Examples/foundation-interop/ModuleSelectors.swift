// Recipe 1 of README.md, "Beside Foundation": module
// selectors. `Module::Name` names a declaration of that module and nothing
// else; Swift 6.3 accepts it without any flag (SE-0491). It works with or
// without the typealiases of RunLoopKitNames.swift (this target has both, to
// prove that they coexist).
//
// It spells every name that clashes (RunLoopKitNames.swift lists them)
// through a selector; scripts/foundation-clashes.sh checks that none is
// missing, since in this target the typealiases would hide an omission.
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

/// Every clashing name (RunLoopKitNames.swift lists them), spelled with a
/// module selector and used: a RunLoopKit timer on RunLoopKit's main loop
/// writes a Foundation-encoded JSON file; a RunLoopKit port on the same loop
/// receives a RunLoopKit message sent to itself; Foundation's URLResourceKey
/// reads a file's resource values.
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
    // A mode outside the common modes: on the main thread the common modes
    // also serve DispatchQueue.main and never run dry (S-EXEC-3), so a run
    // of .default would last its 2 s; this one finishes once the timer fired.
    let timerMode = RunLoopKit::RunLoop.Mode("interop-timer")
    loop.add(timer, forMode: timerMode)
    let result: RunLoopKit::RunLoop.RunResult = loop.run(mode: timerMode, seconds: 2)
    let reading = try JSONDecoder().decode(Reading.self, from: Data(contentsOf: file))
    check(reading == Reading(sensor: "t1", celsius: 21.5),
          "a RunLoopKit::Timer on RunLoopKit::RunLoop.main wrote \(file.lastPathComponent) with Foundation's JSONEncoder (run returned .\(result)); read back: \(reading)")

    let keys: Set<Foundation::URLResourceKey> = [.isRegularFileKey, .fileSizeKey]
    let values = try file.resourceValues(forKeys: keys)
    check(values.isRegularFile == true && values.fileSize.map { $0 > 0 } == true,
          "Foundation::URLResourceKey: \(file.lastPathComponent) is a regular file of \(values.fileSize ?? 0) bytes")
    try FileManager.default.removeItem(at: file)

    let port: RunLoopKit::Port = try RunLoopKit::Port(transport: .inproc)
    let inbox = Inbox<RunLoopKit::PortMessage>()
    port.setMessageHandler { (message: RunLoopKit::PortMessage) in inbox.store(message) }
    try port.schedule(in: loop, forMode: .default)
    let text = Data("sent with RunLoopKit::PortMessage".utf8)
    let message = RunLoopKit::PortMessage(msgid: 7, components: [.data(text)], sendPort: port, replyPort: port)
    try message.send(before: Date() + 1)
    let portResult = loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true)
    port.invalidate()
    let received = inbox.value
    check(received?.msgid == 7 && received?.dataComponents == [text] && received?.sendPort == port && received?.replyPort == port,
          "a RunLoopKit::PortMessage sent to a RunLoopKit::Port on the same loop arrived (run returned .\(portResult)): \(received.map(String.init(describing:)) ?? "nothing")")

    // The selectors name different types, whatever aliases the module has.
    // RunLoopKit's types live in the modules the umbrella re-exports
    // (RunLoopKitCore, RunLoopKitPorts); `RunLoopKit::` finds them through it.
    let named = [
        String(reflecting: RunLoopKit::RunLoop.self), String(reflecting: RunLoopKit::Timer.self),
        String(reflecting: RunLoopKit::Port.self), String(reflecting: RunLoopKit::PortMessage.self),
        String(reflecting: Foundation::RunLoop.self), String(reflecting: Foundation::Timer.self),
        String(reflecting: Foundation::Port.self), String(reflecting: Foundation::PortMessage.self),
        String(reflecting: Foundation::URLResourceKey.self),
    ]
    check(named == [
        "RunLoopKitCore.RunLoop", "RunLoopKitCore.Timer", "RunLoopKitPorts.Port", "RunLoopKitPorts.PortMessage",
        "Foundation.RunLoop", "Foundation.Timer", "Foundation.Port", "Foundation.PortMessage",
        "Foundation.URLResourceKey",
    ], "each selector names its module's type: \(named.joined(separator: ", "))")
}
#endif
