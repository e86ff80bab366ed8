// Raw libzmq with many sockets on one thread: the transport's own cost per
// message when every message goes to a different socket (see CBenchPeers.h).
#define _GNU_SOURCE
#include "CBenchPeers.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <zmq.h>

enum { FANIN_PAYLOAD = 64, FANIN_EVENTS = 64 };

struct bench_zmq_fanin {
    void *context;
    int count;
    void **pulls;
    void **pushes;
    int epoll_fd;
};

static int fanin_fail(void) { return -(zmq_errno() ? zmq_errno() : EIO); }

/// Takes every message waiting on `socket`; returns how many, or -errno.
static int drain(void *socket) {
    char buffer[FANIN_PAYLOAD];
    int taken = 0;
    while (zmq_recv(socket, buffer, sizeof buffer, ZMQ_DONTWAIT) >= 0) taken++;
    return zmq_errno() == EAGAIN ? taken : fanin_fail();
}

bench_zmq_fanin *bench_zmq_fanin_open(int sockets) {
    bench_zmq_fanin *set = calloc(1, sizeof *set);
    if (!set) return NULL;
    set->context = zmq_ctx_new();
    set->pulls = calloc((size_t)sockets, sizeof(void *));
    set->pushes = calloc((size_t)sockets, sizeof(void *));
    set->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    // libzmq allows 1,023 sockets per context unless told otherwise.
    if (set->context) zmq_ctx_set(set->context, ZMQ_MAX_SOCKETS, 2 * sockets + 16);
    if (!set->context || !set->pulls || !set->pushes || set->epoll_fd < 0) {
        bench_zmq_fanin_close(set);
        return NULL;
    }
    // The same socket options as RunLoopKit's ports: high-water marks of 1,000.
    int hwm = 1000, zero = 0;
    for (int i = 0; i < sockets; i++) {
        char endpoint[64];
        snprintf(endpoint, sizeof endpoint, "inproc://bench-fanin-%d", i);
        void *pull = zmq_socket(set->context, ZMQ_PULL);
        void *push = zmq_socket(set->context, ZMQ_PUSH);
        if (!pull || !push) {
            // Out of file descriptors (each socket holds one): keep the pairs made so far.
            if (pull) zmq_close(pull);
            if (push) zmq_close(push);
            if (i == 0) { bench_zmq_fanin_close(set); return NULL; }
            break;
        }
        set->pulls[i] = pull;
        set->pushes[i] = push;
        set->count = i + 1;
        zmq_setsockopt(pull, ZMQ_LINGER, &zero, sizeof zero);
        zmq_setsockopt(push, ZMQ_LINGER, &zero, sizeof zero);
        zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof hwm);
        zmq_setsockopt(push, ZMQ_SNDHWM, &hwm, sizeof hwm);
        int fd = -1;
        size_t size = sizeof fd;
        struct epoll_event event = { .events = EPOLLIN | EPOLLET, .data.u32 = (uint32_t)i };
        if (zmq_bind(pull, endpoint) != 0 || zmq_connect(push, endpoint) != 0 ||
            zmq_getsockopt(pull, ZMQ_FD, &fd, &size) != 0 || epoll_ctl(set->epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0 ||
            drain(pull) < 0) {
            bench_zmq_fanin_close(set);
            return NULL;
        }
    }
    return set;
}

struct fanin_job {
    bench_zmq_fanin *set;
    int count;
    int timeout_ms;
    int cpu;
    sem_t ready;
    uint64_t end_ns;
    int result;
};

/// The receiving thread: one epoll set over every socket's ZMQ_FD
/// (edge-triggered), each signalled socket drained to EAGAIN, which re-arms
/// its edge: the cheapest way libzmq offers to serve many sockets.
static void *fanin_receiver(void *argument) {
    struct fanin_job *job = argument;
    bench_pin_thread(0, job->cpu);
    sem_post(&job->ready);
    struct epoll_event events[FANIN_EVENTS];
    int received = 0;
    while (received < job->count) {
        int ready = epoll_wait(job->set->epoll_fd, events, FANIN_EVENTS, job->timeout_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) { job->result = ready == 0 ? -ETIMEDOUT : -errno; break; }
        for (int i = 0; i < ready; i++) {
            int taken = drain(job->set->pulls[events[i].data.u32]);
            if (taken < 0) { job->result = taken; return NULL; }
            received += taken;
        }
    }
    job->end_ns = bench_now_ns();
    return NULL;
}

int bench_zmq_fanin_run(bench_zmq_fanin *set, int count, uint64_t *elapsed_ns, int timeout_ms, int sender_cpu,
                        int receiver_cpu) {
    struct fanin_job job = { .set = set, .count = count, .timeout_ms = timeout_ms, .cpu = receiver_cpu };
    sem_init(&job.ready, 0, 0);
    pthread_t thread;
    int result = -pthread_create(&thread, NULL, fanin_receiver, &job);
    if (result == 0) {
        sem_wait(&job.ready);
        bench_pin_thread(0, sender_cpu);
        char buffer[FANIN_PAYLOAD];
        memset(buffer, 0x2A, sizeof buffer);
        uint64_t start = bench_now_ns();
        int next = 0;
        for (int i = 0; i < count && result == 0; i++) {
            if (zmq_send(set->pushes[next], buffer, sizeof buffer, 0) != FANIN_PAYLOAD) result = fanin_fail();
            if (++next == set->count) next = 0;
        }
        if (sender_cpu >= 0) bench_unpin_thread(0);
        pthread_join(thread, NULL);
        if (result == 0) result = job.result;
        *elapsed_ns = job.end_ns - start;
    }
    sem_destroy(&job.ready);
    return result;
}

int bench_zmq_fanin_count(const bench_zmq_fanin *set) { return set->count; }

void bench_zmq_fanin_close(bench_zmq_fanin *set) {
    if (!set) return;
    for (int i = 0; i < set->count; i++) {
        if (set->pulls && set->pulls[i]) zmq_close(set->pulls[i]);
        if (set->pushes && set->pushes[i]) zmq_close(set->pushes[i]);
    }
    if (set->epoll_fd >= 0) close(set->epoll_fd);
    if (set->context) zmq_ctx_term(set->context);
    free(set->pulls);
    free(set->pushes);
    free(set);
}
