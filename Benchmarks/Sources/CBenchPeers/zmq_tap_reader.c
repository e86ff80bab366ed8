// The tap's reader for the benchmarks: a PULL socket that counts the events
// of every batch it takes (see CBenchPeers.h).
#define _GNU_SOURCE
#include "zmq_peer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct bench_pull_reader {
    void *context;
    void *socket;
    pthread_t thread;
    atomic_bool stop;
    _Atomic uint64_t events;
};

// Takes every batch the tap sends (docs/tap-format.md): two frames, the
// first a header whose record count (a little-endian u32 at byte 48) says
// how many events the batch carries.
static void *reader_thread(void *argument) {
    bench_pull_reader *reader = argument;
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    while (!atomic_load(&reader->stop)) {
        if (zmq_msg_recv(&frame, reader->socket, 0) < 0) continue;
        if (zmq_msg_size(&frame) >= 64) {
            uint32_t records;
            memcpy(&records, (const char *)zmq_msg_data(&frame) + 48, sizeof records);
            atomic_fetch_add(&reader->events, records);
        }
        while (zmq_msg_more(&frame) && zmq_msg_recv(&frame, reader->socket, 0) >= 0) {}
    }
    zmq_msg_close(&frame);
    return NULL;
}

uint64_t bench_pull_reader_events(bench_pull_reader *reader) {
    return reader ? atomic_load(&reader->events) : 0;
}

bench_pull_reader *bench_pull_reader_start(const char *endpoint) {
    bench_pull_reader *reader = calloc(1, sizeof *reader);
    if (!reader) return NULL;
    reader->context = zmq_ctx_new();
    // A short receive timeout so that stop is noticed quickly.
    reader->socket = make_socket(reader->context, ZMQ_PULL, 50);
    if (!reader->socket || zmq_bind(reader->socket, endpoint) != 0 ||
        pthread_create(&reader->thread, NULL, reader_thread, reader) != 0) {
        if (reader->socket) zmq_close(reader->socket);
        zmq_ctx_term(reader->context);
        free(reader);
        return NULL;
    }
    return reader;
}

uint64_t bench_pull_reader_stop(bench_pull_reader *reader) {
    if (!reader) return 0;
    atomic_store(&reader->stop, true);
    pthread_join(reader->thread, NULL);
    uint64_t count = atomic_load(&reader->events);
    zmq_close(reader->socket);
    zmq_ctx_term(reader->context);
    free(reader);
    return count;
}
