internal import CLinuxSupport
import Glibc

/// The timerfd armed for the earliest of the running mode's next timer and
/// the run's deadline, on CLOCK_MONOTONIC with nanosecond precision
/// (zmq_poll's millisecond timeout is too coarse for timers: docs/design.md, "Sleeping and waking").
///
/// Only the loop thread touches it. Re-arming is skipped when the deadline is
/// the one already armed, so an idle pass costs no timerfd_settime.
final class WakeUpTimer {
    let fileDescriptor: Int32
    /// The armed absolute deadline; `MonotonicClock.never` when disarmed.
    private(set) var armedDeadline = MonotonicClock.never

    init() throws(RunLoopError) {
        let fd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard fd >= 0 else { throw .lastSystemError("timerfd_create") }
        fileDescriptor = fd
    }

    deinit { close(fileDescriptor) }

    /// Arms for `deadline` (absolute monotonic nanoseconds), or disarms for `never`.
    func arm(_ deadline: UInt64) {
        guard deadline != armedDeadline else { return }
        // A deadline of 0 would disarm; anything already past fires at once.
        let value = deadline == MonotonicClock.never ? 0 : max(deadline, 1)
        if rlk_timerfd_arm_absolute(fileDescriptor, value) == 0 {
            armedDeadline = deadline
        }
    }

    /// After the timer fired: clears its readiness. A fired timer is disarmed.
    func drain() {
        var expirations: UInt64 = 0
        while read(fileDescriptor, &expirations, 8) < 0 && errno == EINTR {}
        armedDeadline = MonotonicClock.never
    }
}
