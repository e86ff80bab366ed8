// Raw libzmq peers in two processes over ipc: round trips and throughput
// to a child that echoes and counts (see CBenchPeers.h).
#define _GNU_SOURCE
#include "zmq_peer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct bench_zmq_link {
    void *context;
    void *pair;   // round trips: the child echoes
    void *push;   // throughput: the child counts
    void *acks;   // the child's acknowledgement of each batch
};

static const char quit_marker = 'Q';
static const char end_marker = 'E';
enum { LINK_TIMEOUT_MS = 10000 };

bench_zmq_link *bench_zmq_link_open(const char *pair_endpoint, const char *push_endpoint, const char *ack_endpoint) {
    bench_zmq_link *link = calloc(1, sizeof *link);
    if (!link) return NULL;
    link->context = zmq_ctx_new();
    link->pair = make_socket(link->context, ZMQ_PAIR, LINK_TIMEOUT_MS);
    link->push = make_socket(link->context, ZMQ_PUSH, LINK_TIMEOUT_MS);
    link->acks = make_socket(link->context, ZMQ_PULL, LINK_TIMEOUT_MS);
    if (!link->pair || !link->push || !link->acks || zmq_bind(link->pair, pair_endpoint) != 0 ||
        zmq_bind(link->push, push_endpoint) != 0 || zmq_bind(link->acks, ack_endpoint) != 0) {
        int saved = zmq_errno();
        bench_zmq_link_close(link);
        errno = saved;
        return NULL;
    }
    return link;
}

int bench_zmq_link_pingpong(bench_zmq_link *link, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms) {
    zmq_setsockopt(link->pair, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_setsockopt(link->pair, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    return pingpong(link->pair, false, warmup, iterations, samples_ns, timeout_ms);
}

int bench_zmq_link_throughput(bench_zmq_link *link, int count, uint64_t *elapsed_ns, int timeout_ms) {
    zmq_setsockopt(link->push, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_setsockopt(link->acks, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    char buffer[PAYLOAD];
    memset(buffer, 0x2A, sizeof buffer);
    uint64_t start = bench_now_ns();
    for (int i = 0; i < count; i++) {
        if (zmq_send(link->push, buffer, PAYLOAD, 0) != PAYLOAD) return fail();
    }
    if (zmq_send(link->push, &end_marker, 1, 0) != 1) return fail();
    uint64_t seen = 0;
    if (zmq_recv(link->acks, &seen, sizeof seen, 0) != (int)sizeof seen) return fail();
    *elapsed_ns = bench_now_ns() - start;
    return seen == (uint64_t)count ? 0 : -EPROTO;
}

int bench_zmq_link_wait_ready(bench_zmq_link *link, int timeout_ms) {
    uint64_t sample, elapsed;
    // One echo proves the PAIR is connected, one empty batch the PUSH and
    // the acknowledgements (ipc connections complete asynchronously).
    int result = bench_zmq_link_pingpong(link, 0, 1, &sample, timeout_ms);
    if (result == 0) result = bench_zmq_link_throughput(link, 0, &elapsed, timeout_ms);
    return result;
}

void bench_zmq_link_close(bench_zmq_link *link) {
    if (!link) return;
    if (link->pair) {
        // Give the quit marker a moment to leave; the parent also reaps or kills the child.
        int linger = 200;
        zmq_setsockopt(link->pair, ZMQ_LINGER, &linger, sizeof linger);
        zmq_send(link->pair, &quit_marker, 1, ZMQ_DONTWAIT);
        zmq_close(link->pair);
    }
    if (link->push) zmq_close(link->push);
    if (link->acks) zmq_close(link->acks);
    if (link->context) zmq_ctx_term(link->context);
    free(link);
}

int bench_zmq_child_serve(const char *pair_endpoint, const char *push_endpoint, const char *ack_endpoint, int idle_timeout_ms) {
    void *context = zmq_ctx_new();
    void *pair = make_socket(context, ZMQ_PAIR, LINK_TIMEOUT_MS);
    void *pull = make_socket(context, ZMQ_PULL, LINK_TIMEOUT_MS);
    void *acks = make_socket(context, ZMQ_PUSH, LINK_TIMEOUT_MS);
    int result = 0;
    if (zmq_connect(pair, pair_endpoint) != 0 || zmq_connect(pull, push_endpoint) != 0 || zmq_connect(acks, ack_endpoint) != 0) {
        result = fail();
    }
    char buffer[PAYLOAD];
    uint64_t count = 0;
    while (result == 0) {
        zmq_pollitem_t items[2] = { { pair, 0, ZMQ_POLLIN, 0 }, { pull, 0, ZMQ_POLLIN, 0 } };
        int ready = zmq_poll(items, 2, idle_timeout_ms);
        if (ready < 0) { if (zmq_errno() == EINTR) continue; result = fail(); break; }
        if (ready == 0) break;  // the parent is gone or stuck: do not linger
        if (items[0].revents & ZMQ_POLLIN) {
            int size = zmq_recv(pair, buffer, sizeof buffer, ZMQ_DONTWAIT);
            if (size == 1 && buffer[0] == quit_marker) break;
            if (size >= 0) zmq_send(pair, buffer, (size_t)size, 0);
        }
        // Drain the sink in one go: it is the throughput side.
        while (items[1].revents & ZMQ_POLLIN) {
            int size = zmq_recv(pull, buffer, sizeof buffer, ZMQ_DONTWAIT);
            if (size < 0) break;
            if (size == 1 && buffer[0] == end_marker) {
                zmq_send(acks, &count, sizeof count, 0);
                count = 0;
            } else {
                count++;
            }
        }
    }
    zmq_close(pair);
    zmq_close(pull);
    zmq_close(acks);
    zmq_ctx_term(context);
    return result;
}
