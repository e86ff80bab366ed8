import Glibc
import RunLoopKit

/// `portsniff -- COMMAND ARGS`: the program portsniff starts with the tap
/// on (`RUNLOOPKIT_TAP=1`, reporting to every sniffer in the readers'
/// directory, this one among them), as strace runs the program it traces.
/// SIGINT and SIGTERM that portsniff gets are passed on to it; when it
/// exits, portsniff shows what is left, prints its summary and exits with
/// the program's status.
final class TracedCommand {
    let pid: pid_t
    /// The program's exit status, once it exited: its code, or 128 + the signal that ended it.
    private(set) var status: Int32?

    /// Starts `arguments` (the first found on PATH, as a shell would).
    /// With `traceLoops`, its loops' passes, sleeps and callouts are
    /// events too (`RUNLOOPKIT_TAP_LOOPS=1`).
    init(_ arguments: [String], traceLoops: Bool = false) throws {
        var environment: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            if !text.hasPrefix("RUNLOOPKIT_TAP=") && !text.hasPrefix("RUNLOOPKIT_TAP_LOOPS=") { environment.append(text) }
            index += 1
        }
        environment.append("RUNLOOPKIT_TAP=1")
        if traceLoops { environment.append("RUNLOOPKIT_TAP_LOOPS=1") }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawnp(&child, arguments[0], nil, nil, argv, envp)
        guard rc == 0 else {
            throw TracedCommandError(message: "cannot start \(arguments[0]): \(String(cString: strerror(rc)))")
        }
        pid = child
    }

    /// Passes a signal on to the program.
    func forward(_ signal: Int32) { if status == nil { kill(pid, signal) } }

    /// Reaps the program if it exited; returns whether it did.
    func reapIfExited() -> Bool {
        if status != nil { return true }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return false }
        status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        return true
    }
}

struct TracedCommandError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
