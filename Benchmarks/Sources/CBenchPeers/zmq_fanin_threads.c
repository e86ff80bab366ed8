// Raw libzmq peers, fan-in: several sending threads into one socket (PUSH
// x n -> PULL; see CBenchPeers.h). Many sockets on one thread: zmq_fanin.c.
#define _GNU_SOURCE
#include "zmq_peer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

enum { FANIN_MAX_SENDERS = 64 };

struct fanin_sender {
    void *context;
    const char *endpoint;
    int count;
    int warmup;
    int timeout_ms;
    int cpu;
    sem_t *ready;  // posted once connected and warmed up (or failed)
    sem_t *go;     // waited on before the timed batch
    atomic_int *cancel;  // set (before `go` is posted) when the batch is called off
    int result;
};

static void *fanin_sender_thread(void *argument) {
    struct fanin_sender *job = argument;
    bench_pin_thread(0, job->cpu);
    void *socket = make_socket(job->context, ZMQ_PUSH, job->timeout_ms);
    if (!socket || zmq_connect(socket, job->endpoint) != 0) {
        job->result = fail();
        sem_post(job->ready);
        if (socket) zmq_close(socket);
        return NULL;
    }
    char buffer[PAYLOAD];
    memset(buffer, 0x2A, sizeof buffer);
    for (int i = 0; i < job->warmup && job->result == 0; i++) {
        if (zmq_send(socket, buffer, PAYLOAD, 0) != PAYLOAD) job->result = fail();
    }
    int warmed = job->result;
    sem_post(job->ready);
    if (warmed == 0 && sem_wait_ms(job->go, job->timeout_ms) == 0 && !atomic_load(job->cancel)) {
        for (int i = 0; i < job->count && job->result == 0; i++) {
            if (zmq_send(socket, buffer, PAYLOAD, 0) != PAYLOAD) job->result = fail();
        }
    }
    zmq_close(socket);
    return NULL;
}

int bench_zmq_fanin_threads(const char *endpoint, int senders, int count_per_sender, uint64_t *elapsed_ns, int timeout_ms,
                            int sender_cpu, int receiver_cpu) {
    if (senders < 1 || senders > FANIN_MAX_SENDERS) return -EINVAL;
    void *context = zmq_ctx_new();
    if (!context) return fail();
    void *pull = make_socket(context, ZMQ_PULL, timeout_ms);
    int result = 0;
    if (!pull || zmq_bind(pull, endpoint) != 0) {
        result = fail();
        if (pull) zmq_close(pull);
        zmq_ctx_term(context);
        return result;
    }
    sem_t ready, go;
    atomic_int cancel = 0;
    sem_init(&ready, 0, 0);
    sem_init(&go, 0, 0);
    struct fanin_sender jobs[FANIN_MAX_SENDERS];
    pthread_t threads[FANIN_MAX_SENDERS];
    int started = 0;
    // Split the throughput peer's warm-up among the senders.
    int warmup = THROUGHPUT_WARMUP / senders;
    for (; started < senders; started++) {
        jobs[started] = (struct fanin_sender){ .context = context, .endpoint = endpoint, .count = count_per_sender,
                                               .warmup = warmup, .timeout_ms = timeout_ms, .cpu = sender_cpu,
                                               .ready = &ready, .go = &go, .cancel = &cancel };
        int error = pthread_create(&threads[started], NULL, fanin_sender_thread, &jobs[started]);
        if (error != 0) { result = -error; break; }
    }
    // The calling thread receives.
    bench_pin_thread(0, receiver_cpu);
    char buffer[PAYLOAD];
    for (int i = 0; i < warmup * started && result == 0; i++) {
        if (zmq_recv(pull, buffer, sizeof buffer, 0) < 0) result = fail();
    }
    for (int i = 0; i < started; i++) {
        int waited = sem_wait_ms(&ready, timeout_ms);
        if (result == 0) result = waited;
    }
    if (result == 0 && started == senders) {
        uint64_t start = bench_now_ns();
        for (int i = 0; i < senders; i++) sem_post(&go);
        int total = senders * count_per_sender;
        for (int i = 0; i < total && result == 0; i++) {
            if (zmq_recv(pull, buffer, sizeof buffer, 0) < 0) result = fail();
        }
        *elapsed_ns = bench_now_ns() - start;
    } else {
        // Release the senders that wait: they send nothing now.
        atomic_store(&cancel, 1);
        for (int i = 0; i < started; i++) sem_post(&go);
    }
    if (receiver_cpu >= 0) bench_unpin_thread(0);
    // A sender blocked on a full pipe after a receive failure gets EAGAIN
    // within its send timeout.
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < started && result == 0; i++) {
        if (jobs[i].result != 0) result = jobs[i].result;
    }
    sem_destroy(&ready);
    sem_destroy(&go);
    zmq_close(pull);
    zmq_ctx_term(context);
    return result;
}
