#ifndef CLINUXSUPPORT_H
#define CLINUXSUPPORT_H
// Linux calls that Swift's Glibc module does not import: the wait machinery
// (eventfd, timerfd, epoll) and thread identity (gettid, thread names).
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/epoll.h>
#include <time.h>
#include <pthread.h>
#include <sys/types.h>

/// The kernel thread id of the calling thread.
int32_t rlk_gettid(void);
/// Whether the calling thread is the process's main thread (its tid is the
/// pid); answered once per thread, then from a thread-local.
int rlk_is_main_thread(void);
/// Sets the calling thread's OS-level name (cut to 15 bytes by the kernel).
int rlk_set_current_thread_name(const char *name);
/// Copies the calling thread's OS-level name into buffer (at least 16 bytes).
int rlk_get_current_thread_name(char *buffer, size_t length);
/// Asks the kernel for a time slice of `nanoseconds` for the calling
/// thread (sched_setattr's sched_runtime, which Linux 6.12 and later read
/// for SCHED_OTHER and SCHED_BATCH threads), keeping its policy and nice
/// value; threads it makes later start with the kernel's default slice
/// (reset on fork). Returns 0, or an errno value; a thread of another
/// policy is left as it is (EINVAL).
int rlk_set_current_thread_time_slice(uint64_t nanoseconds);
/// The time slice thread `tid` has (sched_getattr's sched_runtime): 0 from
/// a kernel that keeps none for its policy, or on failure.
uint64_t rlk_thread_time_slice(int32_t tid);
/// CLOCK_MONOTONIC in nanoseconds.
uint64_t rlk_monotonic_nanoseconds(void);
/// CLOCK_REALTIME in nanoseconds since 1970.
int64_t rlk_realtime_nanoseconds(void);
/// Arms timerfd `fd` for the absolute CLOCK_MONOTONIC time `deadline` in
/// nanoseconds; 0 disarms it.
int rlk_timerfd_arm_absolute(int fd, uint64_t deadline);
/// CPU time used by the calling thread, in nanoseconds.
uint64_t rlk_thread_cpu_nanoseconds(void);
/// Locks `mutex`, waiting at most until the absolute CLOCK_MONOTONIC time
/// `deadline` (nanoseconds). Returns 0 when locked, ETIMEDOUT otherwise.
int rlk_mutex_lock_until(pthread_mutex_t *mutex, uint64_t deadline);
/// pidfd_open(2): an fd that becomes readable when process `pid` exits;
/// -1 with errno set on failure (ESRCH: no such process).
int rlk_pidfd_open(pid_t pid);
/// Sets the process umask and returns the previous one.
unsigned rlk_umask(unsigned mask);
/// Bytes this process has written to its Unix-domain sockets (where ipc
/// ports live) that their peers have not read yet (SIOCOUTQ over every
/// AF_UNIX socket in /proc/self/fd).
long long rlk_unread_unix_socket_bytes(void);
/// Whether ThreadSanitizer is linked into this process.
int rlk_running_under_thread_sanitizer(void);
/// Whether AddressSanitizer (and with it LeakSanitizer) is linked into this
/// process.
int rlk_running_under_address_sanitizer(void);

// libdispatch's run-loop hooks for the main queue, exported by Linux's
// libdispatch.so for CoreFoundation (not in its public headers): the main
// queue's eventfd, readable while blocks wait on DispatchQueue.main, and
// the drain that runs them on the calling (main) thread. The handle is -1
// once the main thread is parked in dispatch_main(), where libdispatch
// drains the queue itself (docs/design.md, "The main queue").
int _dispatch_get_main_queue_handle_4CF(void);
void _dispatch_main_queue_callback_4CF(void *message);

#include "TapRing.h"

#endif
