import Glibc
import Logging
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// How long a process waits at exit for what it accepted to send to other
/// processes to be written (S-PORT-4; docs/ports.md, "Process exit"):
/// `Port.exitBound` if the program set it, else `RUNLOOPKIT_EXIT_BOUND` (in
/// seconds) if set and valid, else 2 seconds. 0 waits for nothing.
enum ExitBound {
    static let defaultNanoseconds: UInt64 = 2_000_000_000
    static let environmentVariable = "RUNLOOPKIT_EXIT_BOUND"
    /// The bound a program set, or `unset`.
    static let configured = Atomic<UInt64>(unset)
    static let unset = UInt64.max

    /// The bound in force now.
    static var nanoseconds: UInt64 {
        let set = configured.load(ordering: .relaxed)
        if set != unset { return set }
        guard let value = getenv(environmentVariable), value.pointee != 0 else { return defaultNanoseconds }
        let text = String(cString: value)
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= 3600 else {
            Logger(label: "RunLoopKit.Port").warning(
                "\(environmentVariable)=\(text) is not a number of seconds from 0 to 3600; the exit bound stays at 2 s")
            return defaultNanoseconds
        }
        return UInt64(seconds * 1e9)
    }
}

extension Port {
    /// The longest a process waits at exit for what it sent to other
    /// processes to be written, in all (S-PORT-4); default 2 seconds, `.zero`
    /// for no wait. What is still unwritten then is lost, and the loss is
    /// logged with its count: messages where they are known, else bytes
    /// (docs/ports.md, "Process exit"). The environment variable
    /// `RUNLOOPKIT_EXIT_BOUND` (seconds, for example `0.5`) sets it for a
    /// program that does not; a value set here wins. Any thread; read at
    /// exit.
    public static var exitBound: Duration {
        get { .nanoseconds(Int64(clamping: ExitBound.nanoseconds)) }
        set {
            let (seconds, attoseconds) = newValue.components
            let nanoseconds = max(0, seconds) &* 1_000_000_000 &+ max(0, attoseconds / 1_000_000_000)
            ExitBound.configured.store(min(UInt64(nanoseconds), ExitBound.unset - 1), ordering: .relaxed)
        }
    }
}
