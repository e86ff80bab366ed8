// The test support's child programs: reaped the moment they end, so that
// none is left a zombie under the test runner's watch of its exit tests
// (docs/contributing.md, "A hung test run").
import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Programs the tests start (SpawnedProgram)", .blocksThreads)
struct SpawnedProgramTests {
    @Test("a program that ends is reaped at once, with nobody waiting for it: no zombie is left for the test runner's waitid(P_ALL) to stall on")
    func reapedWhenItEnds() async throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let program = try SpawnedProgram(path: "/bin/sh", ["-c", "exit 7"], in: directory)
        // Gone from /proc (reaped), not a zombie ("Z") waiting for a wait.
        let reaped = await PortProcess.waitUntil(timeout: 30) { access("/proc/\(program.pid)/stat", F_OK) != 0 }
        #expect(reaped, "the ended program is still in /proc: \(readSmallFile("/proc/\(program.pid)/stat") ?? "")")
        #expect(program.waitForExit(timeout: 10) == 7)
    }

    @Test("killAndReap ends a stopped program and returns once it is reaped; waitForExit then gives its status, and a program that outlives its wait is killed")
    func killsStoppedAndSlowPrograms() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let stopped = try SpawnedProgram(path: "/bin/sleep", ["100"], in: directory)
        #expect(kill(stopped.pid, SIGSTOP) == 0)
        stopped.killAndReap()
        #expect(access("/proc/\(stopped.pid)/stat", F_OK) != 0)
        #expect(stopped.waitForExit(timeout: 0) == 128 + SIGKILL)

        let slow = try SpawnedProgram(path: "/bin/sleep", ["100"], in: directory)
        #expect(slow.waitForExit(timeout: 0.2) == nil)
        #expect(access("/proc/\(slow.pid)/stat", F_OK) != 0)
        #expect(slow.waitForExit(timeout: 0) == 128 + SIGKILL)
    }
}
