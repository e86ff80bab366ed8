internal import CLinuxSupport
import Glibc

/// The eventfd that wakes a sleeping loop (CFRunLoopWakeUp's port).
///
/// Signalling is a single 8-byte write; the loop drains it after it wakes.
/// The fd stays open until the loop object itself goes, so that a late
/// `wakeUp()` from another thread can never write into an fd number that has
/// been closed and reused.
final class WakeUpSignal: @unchecked Sendable {
    let fileDescriptor: Int32

    init() throws(RunLoopError) {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw .lastSystemError("eventfd") }
        fileDescriptor = fd
    }

    deinit { close(fileDescriptor) }

    /// Any thread. Never blocks: the counter cannot realistically overflow.
    @inline(__always)
    func signal() {
        var one: UInt64 = 1
        while write(fileDescriptor, &one, 8) < 0 && errno == EINTR {}
    }

    /// The loop thread, after the signal woke it.
    @inline(__always)
    func drain() {
        var count: UInt64 = 0
        while read(fileDescriptor, &count, 8) < 0 && errno == EINTR {}
    }
}
