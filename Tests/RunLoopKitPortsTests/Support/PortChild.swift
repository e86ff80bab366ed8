// Reporting. A child writes `FAIL: ...` lines for failed checks and
// `REPORT key=value` lines for what the parent should know on its standard
// error; the parent turns the FAIL lines into issues (`ChildOutput`). Issues
// recorded with `#expect` in a child reach the parent too, but without their
// details, so children use `PortChild.check`.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

// MARK: - The child's side

/// What a child process uses to tell its parent how it went: `FAIL:` lines
/// and `REPORT key=value` lines on standard error (unbuffered).
enum PortChild {
    /// Runs the child's part. An error it throws becomes a FAIL line; the
    /// last line says it finished.
    static func run(_ body: () async throws -> Void) async {
        armWatchdog()
        do {
            try await body()
        } catch {
            fail("threw \(error)")
        }
        report("finished", 1)
    }

    /// The longest a child may run: a child that hangs ends with a FAIL
    /// line and exit status 3 instead of hanging its test (the test runner
    /// waits for an exit test without a limit).
    static let watchdogSeconds: UInt32 = 600

    /// Arms SIGALRM for `watchdogSeconds`; its handler does only what is
    /// safe in a signal handler (write and _exit).
    static func armWatchdog() {
        signal(SIGALRM) { _ in
            let text: StaticString = "FAIL: the child did not finish within its watchdog's 600 s (PortChild.watchdogSeconds)\n"
            _ = Glibc.write(2, text.utf8Start, text.utf8CodeUnitCount)
            _exit(3)
        }
        alarm(watchdogSeconds)
    }

    static func check(
        _ condition: Bool, _ message: @autoclosure () -> String, fileID: String = #fileID, line: Int = #line
    ) {
        if !condition { fail("\(fileID):\(line): \(message())") }
    }

    static func fail(_ text: String) { write("FAIL: \(text.replacing("\n", with: " | "))\n") }

    static func report(_ key: String, _ value: Any) { write("REPORT \(key)=\(value)\n") }

    /// Makes this (child) process use `path` as its runtime directory.
    /// Call it before the process makes any port.
    static func useRuntimeDirectory(_ path: String) {
        setenv("RUNLOOPKIT_RUNTIME_DIR", path, 1)
    }

    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { break }
            offset += written
        }
    }
}
