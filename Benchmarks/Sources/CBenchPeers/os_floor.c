// The OS floor: what a cross-thread wake-up costs on this kernel before any
// library is involved (eventfd + poll), and what a bare thread costs to start
// and join (see CBenchPeers.h).
#define _GNU_SOURCE
#include "CBenchPeers.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct floor_job {
    int to_echo;     // eventfd the caller writes, the echo thread waits on
    int to_caller;   // and back
    int total;
    int timeout_ms;
    int cpu;
    int result;
};

static int wait_and_read(int fd, int timeout_ms) {
    struct pollfd descriptor = { fd, POLLIN, 0 };
    for (;;) {
        int ready = poll(&descriptor, 1, timeout_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return -errno;
        if (ready == 0) return -ETIMEDOUT;
        break;
    }
    uint64_t value;
    return read(fd, &value, sizeof value) == sizeof value ? 0 : -errno;
}

static int signal_fd(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof one) == sizeof one ? 0 : -errno;
}

static void *floor_echo(void *argument) {
    struct floor_job *job = argument;
    bench_pin_thread(0, job->cpu);
    for (int i = 0; i < job->total && job->result == 0; i++) {
        job->result = wait_and_read(job->to_echo, job->timeout_ms);
        if (job->result == 0) job->result = signal_fd(job->to_caller);
    }
    return NULL;
}

int bench_eventfd_pingpong(int warmup, int iterations, uint64_t *samples_ns, int timeout_ms, int caller_cpu, int peer_cpu) {
    struct floor_job job = { eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC), warmup + iterations, timeout_ms, peer_cpu, 0 };
    if (job.to_echo < 0 || job.to_caller < 0) return -errno;
    pthread_t thread;
    int result = -pthread_create(&thread, NULL, floor_echo, &job);
    if (result == 0) bench_pin_thread(0, caller_cpu);
    for (int i = 0; result == 0 && i < warmup + iterations; i++) {
        uint64_t start = bench_now_ns();
        result = signal_fd(job.to_echo);
        if (result == 0) result = wait_and_read(job.to_caller, timeout_ms);
        uint64_t end = bench_now_ns();
        if (i >= warmup) samples_ns[i - warmup] = end - start;
    }
    if (caller_cpu >= 0) bench_unpin_thread(0);
    // On an error the echo thread gives up after its own poll timeout.
    pthread_join(thread, NULL);
    if (result == 0) result = job.result;
    close(job.to_echo);
    close(job.to_caller);
    return result;
}

static void *churn_task(void *argument) { return (void *)((uintptr_t)argument + 1); }

int bench_pthread_churn(int count, uint64_t *samples_ns, uint64_t *checksum) {
    uint64_t sum = 0;
    for (int i = 0; i < count; i++) {
        uint64_t start = bench_now_ns();
        pthread_t thread;
        int error = pthread_create(&thread, NULL, churn_task, (void *)(uintptr_t)i);
        if (error) return -error;
        void *value;
        pthread_join(thread, &value);
        sum += (uintptr_t)value;
        samples_ns[i] = bench_now_ns() - start;
    }
    *checksum = sum;
    return 0;
}
