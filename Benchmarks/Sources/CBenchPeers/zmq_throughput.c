// Raw libzmq peers, throughput between two threads (PUSH/PULL): the
// transport's own rate (see CBenchPeers.h).
#define _GNU_SOURCE
#include "zmq_peer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct sink_job {
    void *context;
    const char *endpoint;
    int count;
    int timeout_ms;
    int cpu;
    bool polled;  // receive as an event loop does (see `receive`)
    int size;     // bytes per frame
    sem_t ready;
    uint64_t end_ns;
    int result;
};

static void *sink_thread(void *argument) {
    struct sink_job *job = argument;
    bench_pin_thread(0, job->cpu);
    void *socket = make_socket(job->context, ZMQ_PULL, job->timeout_ms);
    if (!socket || zmq_connect(socket, job->endpoint) != 0) {
        job->result = fail();
        sem_post(&job->ready);
        if (socket) zmq_close(socket);
        return NULL;
    }
    int epoll = job->polled ? poll_set(socket) : -1;
    if (job->polled && epoll < 0) job->result = -EIO;
    char buffer[MAX_FRAME];
    size_t size = (size_t)job->size;
    // The warm-up drains first, so that the timed batch starts on empty pipes.
    for (int i = 0; i < THROUGHPUT_WARMUP && job->result == 0; i++) {
        if (receive_into(socket, epoll, buffer, size, job->timeout_ms) < 0) job->result = fail();
    }
    sem_post(&job->ready);
    for (int i = 0; i < job->count && job->result == 0; i++) {
        if (receive_into(socket, epoll, buffer, size, job->timeout_ms) < 0) job->result = fail();
    }
    job->end_ns = bench_now_ns();
    if (epoll >= 0) close(epoll);
    zmq_close(socket);
    return NULL;
}

static int throughput_threads(bool polled, const char *endpoint, int size, int count, uint64_t *elapsed_ns, int timeout_ms,
                              int caller_cpu, int peer_cpu) {
    if (size < 1 || size > MAX_FRAME) return -EINVAL;
    void *context = zmq_ctx_new();
    if (!context) return fail();
    void *socket = make_socket(context, ZMQ_PUSH, timeout_ms);
    int result = 0;
    if (!socket || zmq_bind(socket, endpoint) != 0) {
        result = fail();
    } else {
        struct sink_job job = { .context = context, .endpoint = endpoint, .count = count, .timeout_ms = timeout_ms,
                                .cpu = peer_cpu, .polled = polled, .size = size };
        sem_init(&job.ready, 0, 0);
        pthread_t thread;
        if ((result = -pthread_create(&thread, NULL, sink_thread, &job)) == 0) {
            bench_pin_thread(0, caller_cpu);
            char buffer[MAX_FRAME];
            memset(buffer, 0x2A, sizeof buffer);
            for (int i = 0; i < THROUGHPUT_WARMUP && result == 0; i++) {
                if (zmq_send(socket, buffer, (size_t)size, 0) != size) result = fail();
            }
            if (result == 0) result = sem_wait_ms(&job.ready, timeout_ms);
            uint64_t start = bench_now_ns();
            for (int i = 0; i < count && result == 0 && job.result == 0; i++) {
                if (zmq_send(socket, buffer, (size_t)size, 0) != size) result = fail();
            }
            if (caller_cpu >= 0) bench_unpin_thread(0);
            pthread_join(thread, NULL);
            if (result == 0) result = job.result;
            *elapsed_ns = job.end_ns - start;
        }
        sem_destroy(&job.ready);
    }
    if (socket) zmq_close(socket);
    zmq_ctx_term(context);
    return result;
}

int bench_zmq_throughput_threads(const char *endpoint, int count, uint64_t *elapsed_ns, int timeout_ms,
                                 int caller_cpu, int peer_cpu) {
    return throughput_threads(false, endpoint, PAYLOAD, count, elapsed_ns, timeout_ms, caller_cpu, peer_cpu);
}

int bench_zmq_throughput_threads_sized(const char *endpoint, int frame_bytes, int count, uint64_t *elapsed_ns,
                                       int timeout_ms, int caller_cpu, int peer_cpu) {
    return throughput_threads(false, endpoint, frame_bytes, count, elapsed_ns, timeout_ms, caller_cpu, peer_cpu);
}

int bench_zmq_throughput_threads_polled(const char *endpoint, int count, uint64_t *elapsed_ns, int timeout_ms,
                                        int caller_cpu, int peer_cpu) {
    return throughput_threads(true, endpoint, PAYLOAD, count, elapsed_ns, timeout_ms, caller_cpu, peer_cpu);
}
