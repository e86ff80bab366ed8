// Clocks and process support for rlk-bench (see CBenchPeers.h).
#define _GNU_SOURCE
#include "CBenchPeers.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int32_t bench_gettid(void) { return (int32_t)syscall(SYS_gettid); }

// The kernel's clock id for another thread's CPU time:
// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) = (~tid << 3) | PERTHREAD (4) | SCHED (2).
// Reading it does not wake or disturb that thread, which is the point when
// the thread is an idle loop whose CPU use must be exactly zero.
static clockid_t thread_cpu_clock(int32_t tid) {
    return (clockid_t)(((uint32_t)~(uint32_t)tid) << 3 | 6u);
}

uint64_t bench_thread_cpu_ns(int32_t tid) {
    struct timespec ts;
    if (clock_gettime(thread_cpu_clock(tid), &ts) == 0) {
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    // Fallback: the first field of schedstat is the time on CPU, in ns.
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    FILE *file = fopen(path, "r");
    if (!file) return UINT64_MAX;
    unsigned long long ns = 0;
    int ok = fscanf(file, "%llu", &ns) == 1;
    fclose(file);
    return ok ? (uint64_t)ns : UINT64_MAX;
}

int64_t bench_thread_voluntary_switches(int32_t tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    FILE *file = fopen(path, "r");
    if (!file) return -1;
    char line[256];
    long long value = -1;
    while (fgets(line, sizeof line, file)) {
        if (sscanf(line, "voluntary_ctxt_switches: %lld", &value) == 1) break;
    }
    fclose(file);
    return value;
}

void bench_set_thread_name(const char *name) { prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }

int64_t bench_raise_fd_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -errno;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    return (int64_t)limit.rlim_cur;
}

void bench_die_with_parent(pid_t parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent may have died between posix_spawn and prctl.
    if (getppid() != parent) _exit(0);
}

int bench_pin_thread(int32_t tid, int cpu) {
    if (cpu < 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(tid, sizeof set, &set) == 0 ? 0 : -errno;
}

int bench_thread_affinity(int32_t tid, uint64_t *mask, int words) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(tid, sizeof set, &set) != 0) return -errno;
    memset(mask, 0, (size_t)words * sizeof *mask);
    for (int cpu = 0; cpu < CPU_SETSIZE && cpu < words * 64; cpu++)
        if (CPU_ISSET(cpu, &set)) mask[cpu / 64] |= 1ull << (cpu % 64);
    return 0;
}

int bench_set_thread_affinity(int32_t tid, const uint64_t *mask, int words) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu = 0; cpu < CPU_SETSIZE && cpu < words * 64; cpu++)
        if (mask[cpu / 64] & (1ull << (cpu % 64))) CPU_SET(cpu, &set);
    return sched_setaffinity(tid, sizeof set, &set) == 0 ? 0 : -errno;
}

int bench_unpin_thread(int32_t tid) {
    cpu_set_t set;
    CPU_ZERO(&set);
    long count = sysconf(_SC_NPROCESSORS_ONLN);
    for (long cpu = 0; cpu < count && cpu < CPU_SETSIZE; cpu++) CPU_SET(cpu, &set);
    return sched_setaffinity(tid, sizeof set, &set) == 0 ? 0 : -errno;
}
