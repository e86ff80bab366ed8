// What the raw libzmq peers share (zmq_pingpong.c, zmq_throughput.c,
// zmq_fanin_threads.c, zmq_link.c, zmq_tap_reader.c, zmq_sockets.c): sockets
// that never hang, a receive as an event loop does it, the timed ping-pong.
// Private to CBenchPeers (outside include/, so Swift never sees it).
#ifndef CBENCHPEERS_ZMQ_PEER_H
#define CBENCHPEERS_ZMQ_PEER_H
#include "CBenchPeers.h"

#include <errno.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

enum { PAYLOAD = 64 };
/// The largest frame a throughput peer sends (bench_zmq_throughput_threads_sized).
enum { MAX_FRAME = 256 };
/// Messages sent before a throughput batch is timed (shared by the senders of a fan-in).
enum { THROUGHPUT_WARMUP = 1000 };

static inline int fail(void) { return -(zmq_errno() ? zmq_errno() : EIO); }

/// Every socket here gets linger 0 (closing never waits) and send/receive
/// timeouts, so that a missing peer becomes EAGAIN instead of a hang.
static inline void *make_socket(void *context, int type, int timeout_ms) {
    void *socket = zmq_socket(context, type);
    if (!socket) return NULL;
    int zero = 0;
    zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(socket, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_setsockopt(socket, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    return socket;
}

static inline int sem_wait_ms(sem_t *sem, int timeout_ms) {
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

/// A socket's ZMQ_FD in an epoll set of its own; -1 on failure.
static inline int poll_set(void *socket) {
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
static inline int receive_into(void *socket, int epoll, char *buffer, size_t capacity, int timeout_ms) {
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
static inline int receive(void *socket, int epoll, char *buffer, int timeout_ms) {
    return receive_into(socket, epoll, buffer, PAYLOAD, timeout_ms);
}

static inline int pingpong(void *socket, bool polled, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms) {
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

#endif
