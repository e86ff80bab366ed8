// Bare libzmq sockets, for the memory a port costs beside them (see
// CBenchPeers.h).
#define _GNU_SOURCE
#include "zmq_peer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct bench_zmq_sockets {
    void *context;
    int count;
    int capacity;
    void **sockets;
};

int bench_zmq_sockets_add(bench_zmq_sockets *set, int count) {
    if (set->count + count > set->capacity) {
        int capacity = (set->count + count) * 2;
        void **grown = realloc(set->sockets, (size_t)capacity * sizeof(void *));
        if (!grown) return -ENOMEM;
        set->sockets = grown;
        set->capacity = capacity;
    }
    char endpoint[96];
    for (int i = 0; i < count; i++) {
        void *socket = make_socket(set->context, ZMQ_PULL, 0);
        snprintf(endpoint, sizeof endpoint, "inproc://bench-memory-%p-%d", (void *)set, set->count);
        if (!socket || zmq_bind(socket, endpoint) != 0) {
            int error = fail();
            if (socket) zmq_close(socket);
            return error;
        }
        set->sockets[set->count++] = socket;
    }
    return 0;
}

bench_zmq_sockets *bench_zmq_sockets_open(int count) {
    bench_zmq_sockets *set = calloc(1, sizeof *set);
    if (!set) return NULL;
    set->context = zmq_ctx_new();
    // Takes effect when the first socket is made; room for the memory scenario's counts.
    if (set->context) zmq_ctx_set(set->context, ZMQ_MAX_SOCKETS, 8192);
    if (!set->context || bench_zmq_sockets_add(set, count) != 0) {
        bench_zmq_sockets_close(set);
        return NULL;
    }
    return set;
}

void bench_zmq_sockets_close(bench_zmq_sockets *set) {
    if (!set) return;
    for (int i = 0; i < set->count; i++) zmq_close(set->sockets[i]);
    if (set->context) zmq_ctx_term(set->context);
    free(set->sockets);
    free(set);
}
