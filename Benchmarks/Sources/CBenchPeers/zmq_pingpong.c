// Raw libzmq peers, ping-pong between two threads (PAIR, and REQ/REP): the
// transport's own round trip, with no framing, no locks and no run loop
// around it (see CBenchPeers.h).
#define _GNU_SOURCE
#include "zmq_peer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

void bench_zmq_version(int *major, int *minor, int *patch) { zmq_version(major, minor, patch); }

struct echo_job {
    void *context;
    const char *endpoint;
    int total;
    int timeout_ms;
    int cpu;
    int type;  // ZMQ_PAIR, or ZMQ_REP answering a ZMQ_REQ
    bool polled;  // wait in epoll on ZMQ_FD, as an event loop does, instead of a blocking receive
    int result;
};

static void *echo_thread(void *argument) {
    struct echo_job *job = argument;
    bench_pin_thread(0, job->cpu);
    void *socket = make_socket(job->context, job->type, job->timeout_ms);
    if (!socket || zmq_connect(socket, job->endpoint) != 0) {
        job->result = fail();
        if (socket) zmq_close(socket);
        return NULL;
    }
    int epoll = job->polled ? poll_set(socket) : -1;
    if (job->polled && epoll < 0) job->result = -EIO;
    char buffer[PAYLOAD];
    for (int i = 0; i < job->total && job->result == 0; i++) {
        int size = receive(socket, epoll, buffer, job->timeout_ms);
        if (size < 0 || zmq_send(socket, buffer, (size_t)size, 0) < 0) { job->result = fail(); break; }
    }
    if (epoll >= 0) close(epoll);
    zmq_close(socket);
    return NULL;
}

/// The calling thread's socket is `caller_type` (bound), the echo thread's `echo_type` (connected).
static int pingpong_threads(int caller_type, int echo_type, bool polled, const char *endpoint, int warmup, int iterations,
                            uint64_t *samples_ns, int timeout_ms, int caller_cpu, int peer_cpu) {
    void *context = zmq_ctx_new();
    if (!context) return fail();
    void *socket = make_socket(context, caller_type, timeout_ms);
    int result = 0;
    if (!socket || zmq_bind(socket, endpoint) != 0) {
        result = fail();
    } else {
        struct echo_job job = { context, endpoint, warmup + iterations, timeout_ms, peer_cpu, echo_type, polled, 0 };
        pthread_t thread;
        if ((result = -pthread_create(&thread, NULL, echo_thread, &job)) == 0) {
            bench_pin_thread(0, caller_cpu);
            result = pingpong(socket, polled, warmup, iterations, samples_ns, timeout_ms);
            if (caller_cpu >= 0) bench_unpin_thread(0);
            pthread_join(thread, NULL);
            if (result == 0) result = job.result;
        }
    }
    if (socket) zmq_close(socket);
    zmq_ctx_term(context);
    return result;
}

int bench_zmq_pingpong_threads(const char *endpoint, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms,
                               int caller_cpu, int peer_cpu) {
    return pingpong_threads(ZMQ_PAIR, ZMQ_PAIR, false, endpoint, warmup, iterations, samples_ns, timeout_ms, caller_cpu, peer_cpu);
}

int bench_zmq_pingpong_threads_polled(const char *endpoint, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms,
                                      int caller_cpu, int peer_cpu) {
    return pingpong_threads(ZMQ_PAIR, ZMQ_PAIR, true, endpoint, warmup, iterations, samples_ns, timeout_ms, caller_cpu, peer_cpu);
}

int bench_zmq_reqrep_threads(const char *endpoint, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms,
                             int caller_cpu, int peer_cpu) {
    return pingpong_threads(ZMQ_REQ, ZMQ_REP, false, endpoint, warmup, iterations, samples_ns, timeout_ms, caller_cpu, peer_cpu);
}
