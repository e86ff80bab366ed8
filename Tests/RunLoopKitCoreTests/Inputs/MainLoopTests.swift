// RunLoop.main on the main thread: S-EXEC-3 and S-RUN-1's main-loop
// exception. The test runner parks its main thread in dispatch_main(),
// where libdispatch drains the main queue itself, so these rules are
// checked in a program with a synchronous main (Tests/MainLoopChecks) that
// this suite starts once and whose report it reads, one line per check.
import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("RunLoop.main serves the main queue (S-EXEC-3, S-RUN-1)", .blocksThreads)
struct MainLoopTests {
    /// The checks' report: run once for the whole suite.
    static let report: (status: Int32?, output: String, errors: String) = {
        let directory = makeTemporaryDirectory("rlk-main-loop")
        defer { rmdir(directory) }
        do {
            let program = try SpawnedProgram("main-loop-checks", [], in: directory)
            let status = program.waitForExit(timeout: 120)
            defer { unlink(program.outputPath); unlink(program.errorPath) }
            return (status, program.output, program.errorOutput)
        } catch {
            return (nil, "", "could not start main-loop-checks: \(error)")
        }
    }()

    static func line(of check: String) -> String? {
        report.output.split(separator: "\n").first { $0.hasPrefix("PASS \(check)") || $0.hasPrefix("FAIL \(check):") }.map(String.init)
    }

    @Test("The checks program ran every check and exited 0")
    func programPassed() {
        #expect(Self.report.status == 0, "main-loop-checks: \(Self.report.output)\n\(Self.report.errors)")
        #expect(Self.report.output.hasSuffix("DONE\n"))
    }

    @Test("S-EXEC-3: DispatchQueue.main blocks and @MainActor jobs run on the main thread while RunLoop.main runs a common mode; a drain is the pass's handled source", arguments: [
        "block-from-another-thread", "main-actor-task", "drain-is-a-handled-source",
        "mode-outside-common-modes-does-not-drain", "added-common-mode-drains",
        "timers-ports-and-main-queue-interleave", "monitor-sees-drains",
    ])
    func mainQueueRuns(check: String) {
        #expect(Self.line(of: check) == "PASS \(check)", "\(Self.report.output)\n\(Self.report.errors)")
    }

    @Test("S-EXEC-3, S-EXEC-1: a run nested in a main-queue block or a MainActor job does not drain the main queue again, nor count it, nor spin", arguments: [
        "nested-run-in-block-does-not-drain", "nested-run-in-main-actor-job-does-not-drain",
    ])
    func nestedRunsDoNotDrain(check: String) {
        #expect(Self.line(of: check) == "PASS \(check)", "\(Self.report.output)\n\(Self.report.errors)")
    }

    @Test("S-RUN-1: the main loop's common modes stand for the main queue and are never empty: run(mode:before:) waits, limitDate is distantFuture, run() does not return", arguments: [
        "empty-common-mode-waits", "run-does-not-finish",
    ])
    func commonModesNeverEmpty(check: String) {
        #expect(Self.line(of: check) == "PASS \(check)", "\(Self.report.output)\n\(Self.report.errors)")
    }
}
