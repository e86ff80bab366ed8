// Raw libzmq peers in two processes over tcp, in the socket shape
// RunLoopKit's tcp uses: one side a ROUTER (ZMQ_ROUTER_MANDATORY), the
// other a DEALER that says hello first, CURVE or plain (see CBenchPeers.h).
#define _GNU_SOURCE
#include "zmq_peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_zmq_tcp_link {
    void *context;
    void *router;
    char peer[256];
    size_t peer_size;
};

// The first byte of a frame says what it is.
static const char hello_marker = 'H';
static const char ping_marker = 'P';
static const char data_marker = 'D';
static const char end_marker = 'E';
static const char quit_marker = 'Q';
enum { TCP_LINK_TIMEOUT_MS = 10000 };

bench_zmq_tcp_link *bench_zmq_tcp_link_open(int curve, char *endpoint, char *server_public) {
    bench_zmq_tcp_link *link = calloc(1, sizeof *link);
    if (!link) return NULL;
    link->context = zmq_ctx_new();
    link->router = make_socket(link->context, ZMQ_ROUTER, TCP_LINK_TIMEOUT_MS);
    int one = 1;
    server_public[0] = 0;
    if (!link->router || zmq_setsockopt(link->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one) != 0) goto failed;
    if (curve) {
        char secret[41];
        if (zmq_curve_keypair(server_public, secret) != 0) goto failed;
        if (zmq_setsockopt(link->router, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
            zmq_setsockopt(link->router, ZMQ_CURVE_SECRETKEY, secret, 40) != 0) goto failed;
    }
    if (zmq_bind(link->router, "tcp://127.0.0.1:*") != 0) goto failed;
    size_t size = 64;
    if (zmq_getsockopt(link->router, ZMQ_LAST_ENDPOINT, endpoint, &size) != 0) goto failed;
    return link;
failed:;
    int saved = zmq_errno();
    bench_zmq_tcp_link_close(link);
    errno = saved;
    return NULL;
}

int bench_zmq_tcp_link_wait_ready(bench_zmq_tcp_link *link, int timeout_ms) {
    zmq_setsockopt(link->router, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    int size = zmq_recv(link->router, link->peer, sizeof link->peer, 0);
    if (size <= 0) return fail();
    link->peer_size = (size_t)size;
    char marker;
    if (zmq_recv(link->router, &marker, 1, 0) != 1 || marker != hello_marker) return -EPROTO;
    return 0;
}

/// One frame to the child: its routing id, then the frame.
static int send_to_child(bench_zmq_tcp_link *link, const void *bytes, size_t size) {
    if (zmq_send(link->router, link->peer, link->peer_size, ZMQ_SNDMORE) < 0) return fail();
    if (zmq_send(link->router, bytes, size, 0) < 0) return fail();
    return 0;
}

/// One frame from the child into `buffer`; its size, or an error.
static int receive_from_child(bench_zmq_tcp_link *link, void *buffer, size_t capacity) {
    char peer[256];
    if (zmq_recv(link->router, peer, sizeof peer, 0) < 0) return fail();
    int size = zmq_recv(link->router, buffer, capacity, 0);
    return size < 0 ? fail() : size;
}

int bench_zmq_tcp_link_pingpong(bench_zmq_tcp_link *link, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms) {
    zmq_setsockopt(link->router, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_setsockopt(link->router, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    char buffer[PAYLOAD];
    memset(buffer, 0x2A, sizeof buffer);
    buffer[0] = ping_marker;
    for (int i = 0; i < warmup + iterations; i++) {
        uint64_t start = bench_now_ns();
        int result = send_to_child(link, buffer, PAYLOAD);
        if (result < 0) return result;
        result = receive_from_child(link, buffer, sizeof buffer);
        if (result < 0) return result;
        if (i >= warmup) samples_ns[i - warmup] = bench_now_ns() - start;
    }
    return 0;
}

int bench_zmq_tcp_link_throughput(bench_zmq_tcp_link *link, int count, uint64_t *elapsed_ns, int timeout_ms) {
    zmq_setsockopt(link->router, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_setsockopt(link->router, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    char buffer[PAYLOAD];
    memset(buffer, 0x2A, sizeof buffer);
    buffer[0] = data_marker;
    uint64_t start = bench_now_ns();
    for (int i = 0; i < count; i++) {
        int result = send_to_child(link, buffer, PAYLOAD);
        if (result < 0) return result;
    }
    int result = send_to_child(link, &end_marker, 1);
    if (result < 0) return result;
    uint64_t seen = 0;
    if (receive_from_child(link, &seen, sizeof seen) != (int)sizeof seen) return -EPROTO;
    *elapsed_ns = bench_now_ns() - start;
    return seen == (uint64_t)count ? 0 : -EPROTO;
}

void bench_zmq_tcp_link_close(bench_zmq_tcp_link *link) {
    if (!link) return;
    if (link->router) {
        if (link->peer_size > 0) send_to_child(link, &quit_marker, 1);
        zmq_close(link->router);
    }
    if (link->context) zmq_ctx_term(link->context);
    free(link);
}

int bench_zmq_tcp_child_serve(const char *endpoint, const char *server_public, int idle_timeout_ms) {
    void *context = zmq_ctx_new();
    void *dealer = make_socket(context, ZMQ_DEALER, TCP_LINK_TIMEOUT_MS);
    int result = 0;
    const char id[] = "child";
    zmq_setsockopt(dealer, ZMQ_ROUTING_ID, id, sizeof id - 1);
    if (server_public[0]) {
        char public[41], secret[41];
        if (zmq_curve_keypair(public, secret) != 0 || zmq_setsockopt(dealer, ZMQ_CURVE_SERVERKEY, server_public, 40) != 0 ||
            zmq_setsockopt(dealer, ZMQ_CURVE_PUBLICKEY, public, 40) != 0 ||
            zmq_setsockopt(dealer, ZMQ_CURVE_SECRETKEY, secret, 40) != 0) result = fail();
    }
    if (result == 0 && (zmq_connect(dealer, endpoint) != 0 || zmq_send(dealer, &hello_marker, 1, 0) != 1)) result = fail();
    char buffer[PAYLOAD];
    uint64_t count = 0;
    while (result == 0) {
        zmq_pollitem_t item = { dealer, 0, ZMQ_POLLIN, 0 };
        int ready = zmq_poll(&item, 1, idle_timeout_ms);
        if (ready < 0) { if (zmq_errno() == EINTR) continue; result = fail(); break; }
        if (ready == 0) break;  // the parent is gone or stuck: do not linger
        int size;
        while ((size = zmq_recv(dealer, buffer, sizeof buffer, ZMQ_DONTWAIT)) >= 0) {
            if (size >= 1 && buffer[0] == quit_marker) goto done;
            if (size >= 1 && buffer[0] == ping_marker) {
                zmq_send(dealer, buffer, (size_t)size, 0);
            } else if (size == 1 && buffer[0] == end_marker) {
                zmq_send(dealer, &count, sizeof count, 0);
                count = 0;
            } else {
                count++;
            }
        }
    }
done:
    zmq_close(dealer);
    zmq_ctx_term(context);
    return result;
}
