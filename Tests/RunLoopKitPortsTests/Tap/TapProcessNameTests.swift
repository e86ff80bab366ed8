// The name the tap gives a process: the basename of its argv[0], as ps
// shows it (docs/tap-format.md, "Names"), never the kernel's "exe" of a
// program that started itself again through /proc/self/exe.
import Testing
@testable import RunLoopKitPorts
import RunLoopKitTestSupport

@Suite("The tap's process names", .blocksThreads)
struct TapProcessNameTests {
    static func cmdline(_ arguments: String...) -> [UInt8] { arguments.flatMap { Array($0.utf8) + [0] } }

    @Test("a process is named by the basename of its argv[0], not by its comm")
    func basenameOfArgv0() {
        let name = TapCountFile.name(cmdline: Self.cmdline("/usr/local/bin/order-service", "--port", "9"),
                                     comm: Array("order-servic\n".utf8), executable: "/usr/local/bin/order-service")
        #expect(name == "order-service", "the whole name, not comm's 15 bytes")
        #expect(TapCountFile.name(cmdline: Self.cmdline("worker"), comm: [], executable: nil) == "worker")
    }

    @Test("a program started as /proc/self/exe is named by its executable, never \"exe\"")
    func startedThroughProcSelfExe() {
        let name = TapCountFile.name(cmdline: Self.cmdline("/proc/self/exe", "server"), comm: Array("exe\n".utf8),
                                     executable: "/opt/demo/.build/debug/ipc-demo")
        #expect(name == "ipc-demo")
    }

    @Test("an empty argv[0] falls back to comm, and nothing at all to \"?\"")
    func fallbacks() {
        #expect(TapCountFile.name(cmdline: [0], comm: Array("daemon\n".utf8), executable: nil) == "daemon")
        #expect(TapCountFile.name(cmdline: [], comm: [], executable: nil) == "?")
    }

    @Test("this process's own name is its argv[0]'s basename")
    func thisProcess() {
        let argv0 = CommandLine.arguments[0]
        let expected = String(argv0.split(separator: "/").last ?? "")
        #expect(TapNames.processName == expected)
    }
}
