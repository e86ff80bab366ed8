// Raw libzmq peers: the transport's own limit, with no framing, no locks and
// no run loop around it (see CBenchPeers.h).
#define _GNU_SOURCE
#include "CBenchPeers.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <time.h>
#include <zmq.h>

enum { PAYLOAD = 64 };
/// The largest frame a throughput peer sends (bench_zmq_throughput_threads_sized).
enum { MAX_FRAME = 256 };

void bench_zmq_version(int *major, int *minor, int *patch) { zmq_version(major, minor, patch); }

static int fail(void) { return -(zmq_errno() ? zmq_errno() : EIO); }

/// Every socket here gets linger 0 (closing never waits) and send/receive
/// timeouts, so that a missing peer becomes EAGAIN instead of a hang.
static void *make_socket(void *context, int type, int timeout_ms) {
    void *socket = zmq_socket(context, type);
    if (!socket) return NULL;
    int zero = 0;
    zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(socket, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_setsockopt(socket, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    return socket;
}

static int sem_wait_ms(sem_t *sem, int timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec += 1; deadline.tv_nsec -= 1000000000L; }
    while (sem_timedwait(sem, &deadline) != 0) {
        if (errno != EINTR) return -errno;
    }
    return 0;
}

// MARK: - Ping-pong between two threads (PAIR)

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

/// A socket's ZMQ_FD in an epoll set of its own; -1 on failure.
static int poll_set(void *socket) {
    int fd;
    size_t size = sizeof fd;
    if (zmq_getsockopt(socket, ZMQ_FD, &fd, &size) != 0) return -1;
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = { .events = EPOLLIN, .data.fd = fd };
    if (epoll < 0 || epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0) return -1;
    return epoll;
}

/// Receives as an event loop that serves a libzmq socket must: a
/// non-blocking receive, and when it finds nothing (which also re-arms
/// ZMQ_FD, libzmq's edge-triggered signal), a wait in epoll for ZMQ_FD.
/// With `epoll` < 0: a plain blocking receive.
static int receive_into(void *socket, int epoll, char *buffer, size_t capacity, int timeout_ms) {
    if (epoll < 0) return zmq_recv(socket, buffer, capacity, 0);
    for (;;) {
        int size = zmq_recv(socket, buffer, capacity, ZMQ_DONTWAIT);
        if (size >= 0 || zmq_errno() != EAGAIN) return size;
        struct epoll_event event;
        int ready = epoll_wait(epoll, &event, 1, timeout_ms);
        if (ready == 0) { errno = EAGAIN; return -1; }
        if (ready < 0 && errno != EINTR) return -1;
    }
}

/// receive_into a PAYLOAD-byte buffer.
static int receive(void *socket, int epoll, char *buffer, int timeout_ms) {
    return receive_into(socket, epoll, buffer, PAYLOAD, timeout_ms);
}

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

static int pingpong(void *socket, bool polled, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms) {
    int epoll = polled ? poll_set(socket) : -1;
    if (polled && epoll < 0) return -EIO;
    char buffer[PAYLOAD];
    memset(buffer, 0x2A, sizeof buffer);
    int result = 0;
    for (int i = 0; i < warmup + iterations; i++) {
        uint64_t start = bench_now_ns();
        if (zmq_send(socket, buffer, PAYLOAD, 0) != PAYLOAD) { result = fail(); break; }
        if (receive(socket, epoll, buffer, timeout_ms) != PAYLOAD) { result = fail(); break; }
        uint64_t end = bench_now_ns();
        if (i >= warmup) samples_ns[i - warmup] = end - start;
    }
    if (epoll >= 0) close(epoll);
    return result;
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

// MARK: - Throughput between two threads (PUSH/PULL)

enum { THROUGHPUT_WARMUP = 1000 };

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

// MARK: - Fan-in: several sending threads into one socket (PUSH × n → PULL)

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

// MARK: - Two processes over ipc

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

// MARK: - The tap's reader

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

// MARK: - Bare sockets, for memory per port

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
