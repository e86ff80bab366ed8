#define _GNU_SOURCE
#include "CLinuxSupport.h"
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <errno.h>
#include <sys/stat.h>
#include <dirent.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <sched.h>

int32_t rlk_gettid(void) { return (int32_t)syscall(SYS_gettid); }

// Whether the calling thread is the process's main thread, asked on every
// run of the main loop: two system calls (gettid, getpid) the first time
// on each thread, a thread-local read after. A fork's child clears the
// forking thread's answer, since it is the child's main thread now.
static __thread int main_thread_answer;  // 0: not asked yet, 1: main, 2: not
static pthread_once_t main_thread_fork_once = PTHREAD_ONCE_INIT;
static void main_thread_forget(void) { main_thread_answer = 0; }
static void main_thread_register_fork(void) { pthread_atfork(NULL, NULL, main_thread_forget); }

int rlk_is_main_thread(void) {
    if (main_thread_answer == 0) {
        pthread_once(&main_thread_fork_once, main_thread_register_fork);
        main_thread_answer = rlk_gettid() == getpid() ? 1 : 2;
    }
    return main_thread_answer == 1;
}

int rlk_set_current_thread_name(const char *name) {
    char cut[16];
    strncpy(cut, name, 15);
    cut[15] = 0;
    return pthread_setname_np(pthread_self(), cut);
}

// glibc 2.36 has no wrapper for sched_setattr(2) and sched_getattr(2).
#define SCHED_FLAG_RESET_ON_FORK_VALUE 0x01
struct rlk_sched_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};

int rlk_set_current_thread_time_slice(uint64_t nanoseconds) {
    struct rlk_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return errno;
    if (attr.policy != SCHED_OTHER && attr.policy != SCHED_BATCH) return EINVAL;
    // The nice value read back is kept: a thread may raise its priority
    // only with CAP_SYS_NICE.
    attr.size = sizeof attr;
    // SCHED_FLAG_RESET_ON_FORK: threads it makes (libdispatch's workers
    // among them) start with the kernel's default slice.
    attr.flags = SCHED_FLAG_RESET_ON_FORK_VALUE;
    attr.runtime = nanoseconds;
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : errno;
}

uint64_t rlk_thread_time_slice(int32_t tid) {
    struct rlk_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, tid, &attr, sizeof attr, 0) != 0) return 0;
    return attr.runtime;
}

int rlk_get_current_thread_name(char *buffer, size_t length) {
    return pthread_getname_np(pthread_self(), buffer, length);
}

uint64_t rlk_monotonic_nanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t rlk_realtime_nanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + (int64_t)ts.tv_nsec;
}

int rlk_timerfd_arm_absolute(int fd, uint64_t deadline) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    spec.it_value.tv_sec = (time_t)(deadline / 1000000000ull);
    spec.it_value.tv_nsec = (long)(deadline % 1000000000ull);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

uint64_t rlk_thread_cpu_nanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rlk_running_under_thread_sanitizer(void) {
    return dlsym(RTLD_DEFAULT, "__tsan_init") != NULL;
}

int rlk_running_under_address_sanitizer(void) {
    // This file built with -fsanitize=address says so; otherwise ask whether
    // the runtime is in the process (a Swift target built with it, this one
    // not).
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#endif
#endif
    return dlsym(RTLD_DEFAULT, "__asan_init") != NULL;
}

int rlk_mutex_lock_until(pthread_mutex_t *mutex, uint64_t deadline) {
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline / 1000000000ull);
    ts.tv_nsec = (long)(deadline % 1000000000ull);
    return pthread_mutex_clocklock(mutex, CLOCK_MONOTONIC, &ts);
}

int rlk_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

unsigned rlk_umask(unsigned mask) { return (unsigned)umask((mode_t)mask); }

long long rlk_unread_unix_socket_bytes(void) {
    DIR *directory = opendir("/proc/self/fd");
    if (directory == NULL) return 0;
    long long total = 0;
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        int fd = atoi(entry->d_name);
        struct stat info;
        if (fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) continue;
        int domain = 0;
        socklen_t length = sizeof(domain);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != AF_UNIX) continue;
        int queued = 0;
        if (ioctl(fd, SIOCOUTQ, &queued) == 0 && queued > 0) total += queued;
    }
    closedir(directory);
    return total;
}
