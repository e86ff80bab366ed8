// The proof that `./scripts/asan.sh` can still see a leaked port.
//
// LeakSanitizer treats an allocation that a suppression matches as a root:
// whatever it points to is no longer reported. A Swift object that has ever
// been weakly referenced has a side table that points back to it, so a
// suppression of side tables (`leak:formWeakReference`, the obvious one)
// would hide every leaked port and loop. The script suppresses no side
// table (SideTableAnchor makes the live ones reachable instead), and this
// test keeps it that way: a child process leaks two ports that have side
// tables (the registry referenced them weakly, their socket sources still
// do), both scheduled on a loop, used and invalidated: one retained and
// dropped, one owned by an object in a retain cycle through a closure.
// LeakSanitizer must report both at the child's exit, with whatever
// suppressions the environment names (docs/contributing.md,
// "AddressSanitizer and leaks").
//
// Invalidated, because a port the registry still references weakly (every
// local port until it is invalidated or freed) is never reported: the weak
// reference points to the side table, which points to the port, and
// LeakSanitizer cannot tell weak from strong. PortLifetimeTests' live
// counts catch those leaks instead.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("LeakSanitizer still sees a leaked port", .blocksThreads)
struct LeakSanitizerProofTests {
    @Test("A child that leaks two used, invalidated ports with side tables (one retained and dropped, one owned by an object in a retain cycle through a closure) is reported by LeakSanitizer at its exit, suppressions in place")
    func plantedLeaksAreReported() async throws {
        let reported = Self.leakReportExpected
        // The child's report goes to a file of this test's: what a child
        // writes to its standard error at exit (where LeakSanitizer checks)
        // does not reach the parent of an exit test.
        let directory = try PortProcess.makeTemporaryDirectory("lsan-proof")
        defer { PortProcess.removeTree(directory) }
        let result = try await #require(processExitsWith: reported ? .failure : .success, observing: [\.standardErrorContent]) {
            [directory = directory as String] in
            LeakSanitizerProofTests.plantLeaks(reportingTo: directory + "/report")
        }
        let output = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(output.contains("REPORT planted=2"), "the child did not plant its leaks: \(output)")
        guard reported else {
            print("LeakSanitizer proof: the leak report is not checked: \(Self.whyNoReport). Run ./scripts/asan.sh for the proof.")
            return
        }
        print("LeakSanitizer proof: suppressions in effect: \(Self.suppressionsInEffect)")
        let report = PortProcess.directoryEntries(directory).map { SpawnedProgram.read(directory + "/" + $0) }.joined()
        #expect(report.contains("ERROR: LeakSanitizer: detected memory leaks"), "no leak report: \(report)")
        // Each planted port is named by a stack that allocated it: Port's
        // initializer called from the planting function (Swift's mangled
        // names spell both).
        for planter in ["plantRetainedPort", "plantPortInACycle"] {
            #expect(Self.leakBlocks(in: report).contains { $0.contains(planter) && $0.contains("RunLoopKitPorts4PortC") },
                    "LeakSanitizer did not report the port leaked by \(planter): \(report)")
        }
    }

    // MARK: - The child

    /// In the child: plants the two leaks, then returns, so that the child
    /// exits and LeakSanitizer checks it, writing its report to `path`.<pid>
    /// (where the parent reads it, whatever log_path the environment gives:
    /// ./scripts/asan.sh sets one to catch every process's reports).
    static func plantLeaks(reportingTo path: String) {
        sendReports(to: path)
        let thread = LoopThread(name: "lsan-proof")
        do {
            try thread.start()
            guard let loop = thread.runLoop else { throw TestFailure("the loop thread has no loop") }
            try plantRetainedPort(on: loop)
            try plantPortInACycle(on: loop)
        } catch {
            PortChild.fail("could not plant the leaks: \(error)")
        }
        // The loop goes (its sources let go of the ports' receivers); only
        // what was planted stays.
        thread.stop()
        PortChild.report("planted", 2)
    }

    /// A port that was scheduled, received a message and was invalidated,
    /// retained once more and dropped: nothing references it, and it is
    /// never freed.
    @inline(never)
    static func plantRetainedPort(on loop: RunLoop) throws {
        let port = try Port(transport: .inproc)
        try receiveOne(on: port, loop: loop)
        port.invalidate()
        _ = Unmanaged.passRetained(port)
    }

    /// A port owned by an object that a closure of its own keeps alive (a
    /// retain cycle through a closure): the owner invalidates the port
    /// when done, as an owner should, but is itself never freed, nor the
    /// port with it.
    @inline(never)
    static func plantPortInACycle(on loop: RunLoop) throws {
        let owner = PortOwner(port: try Port(transport: .ipc))
        try receiveOne(on: owner.port, loop: loop)
        owner.onDone = { owner.port.invalidate() }
        owner.onDone?()
    }

    /// What `plantPortInACycle` leaks: a port's owner, with a closure that
    /// captures the owner.
    final class PortOwner: @unchecked Sendable {
        // @unchecked Sendable: used by one thread.
        let port: Port
        var onDone: (() -> Void)?
        init(port: Port) { self.port = port }
    }

    /// Schedules `port` on `loop` (its socket source references it weakly,
    /// the registry too), sends it a message and waits for its delivery.
    private static func receiveOne(on port: Port, loop: RunLoop) throws {
        let arrived = IPCCounter()
        port.setMessageHandler { _ in arrived.add() }
        try port.schedule(in: loop, forMode: .default)
        try port.send(msgid: 1, components: [.data(Data("planted".utf8))], before: Date() + 10)
        guard arrived.wait(atLeast: 1) else { throw TestFailure("the planted port's message did not arrive") }
    }

    // MARK: - Sanitizer settings

    /// Whether the child's leaks must be reported: AddressSanitizer runs
    /// this process and the environment does not turn leak detection off.
    static var leakReportExpected: Bool { whyNoReport.isEmpty }

    /// Why no report is expected, or "" if one is.
    static var whyNoReport: String {
        guard ProcessProbe.isUnderAddressSanitizer else { return "this process does not run under AddressSanitizer" }
        for name in ["ASAN_OPTIONS", "LSAN_OPTIONS"] {
            let options = environment(name)
            if options.contains("detect_leaks=0") || options.contains("detect_leaks=false") {
                return "\(name) turns leak detection off"
            }
        }
        return ""
    }

    /// The suppressions file the environment names, as the child inherits it.
    static var suppressionsInEffect: String {
        let options = environment("LSAN_OPTIONS").split(separator: ":")
        return options.first { $0.hasPrefix("suppressions=") }.map(String.init) ?? "none"
    }

    private static func environment(_ name: String) -> String {
        getenv(name).map { String(cString: $0) } ?? ""
    }

    /// The report's leak blocks: each "Direct/Indirect leak of ..." line with
    /// the stack under it.
    static func leakBlocks(in output: String) -> [String] {
        output.split(separator: "\n", omittingEmptySubsequences: false)
            .split { $0.trimmingPrefix(" ").isEmpty }
            .map { $0.joined(separator: "\n") }
            .filter { $0.contains("leak of") }
    }

    /// Sends this process's sanitizer reports to `path`.<pid>
    /// (`__sanitizer_set_report_path`, found at run time: the plain build has
    /// no sanitizer runtime).
    private static func sendReports(to path: String) {
        typealias SetReportPath = @convention(c) (UnsafePointer<CChar>?) -> Void
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__sanitizer_set_report_path") else { return }
        path.withCString { unsafeBitCast(symbol, to: SetReportPath.self)($0) }
    }
}
