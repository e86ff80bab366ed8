// Raw libzmq peers in two processes over tcp, in the socket shape
// RunLoopKit's tcp uses between the benchmark and its child: the child
// listens with a ROUTER (ZMQ_ROUTER_MANDATORY, CURVE server or plain), the
// benchmark dials it with a DEALER that says hello first and sends from it
// (see CBenchPeers.h).
#define _GNU_SOURCE
#include "zmq_peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_zmq_tcp_link {
    void *context;
    void *dealer;
    int connected;
};

// The first byte of a frame says what it is.
static const char hello_marker = 'H';
static const char ping_marker = 'P';
static const char data_marker = 'D';
static const char end_marker = 'E';
static const char quit_marker = 'Q';
enum { TCP_LINK_TIMEOUT_MS = 10000 };

bench_zmq_tcp_link *bench_zmq_tcp_link_open(const char *endpoint, const char *server_public) {
    bench_zmq_tcp_link *link = calloc(1, sizeof *link);
    if (!link) return NULL;
    link->context = zmq_ctx_new();
    link->dealer = make_socket(link->context, ZMQ_DEALER, TCP_LINK_TIMEOUT_MS);
    if (!link->dealer) goto failed;
    if (server_public[0]) {
        char public[41], secret[41];
        if (zmq_curve_keypair(public, secret) != 0 || zmq_setsockopt(link->dealer, ZMQ_CURVE_SERVERKEY, server_public, 40) != 0 ||
            zmq_setsockopt(link->dealer, ZMQ_CURVE_PUBLICKEY, public, 40) != 0 ||
            zmq_setsockopt(link->dealer, ZMQ_CURVE_SECRETKEY, secret, 40) != 0) goto failed;
    }
    if (zmq_connect(link->dealer, endpoint) != 0 || zmq_send(link->dealer, &hello_marker, 1, 0) != 1) goto failed;
    return link;
failed:;
    int saved = zmq_errno();
    bench_zmq_tcp_link_close(link);
    errno = saved;
    return NULL;
}

int bench_zmq_tcp_link_wait_ready(bench_zmq_tcp_link *link, int timeout_ms) {
    zmq_setsockopt(link->dealer, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    char marker;
    int size = zmq_recv(link->dealer, &marker, 1, 0);
    if (size < 0) return fail();
    if (size != 1 || marker != hello_marker) return -EPROTO;
    link->connected = 1;
    return 0;
}

/// One frame to the child (its ROUTER reads the routing id first).
static int send_to_child(bench_zmq_tcp_link *link, const void *bytes, size_t size) {
    return zmq_send(link->dealer, bytes, size, 0) < 0 ? fail() : 0;
}

/// One frame from the child into `buffer`; its size, or an error.
static int receive_from_child(bench_zmq_tcp_link *link, void *buffer, size_t capacity) {
    int size = zmq_recv(link->dealer, buffer, capacity, 0);
    return size < 0 ? fail() : size;
}

int bench_zmq_tcp_link_pingpong(bench_zmq_tcp_link *link, int warmup, int iterations, uint64_t *samples_ns, int timeout_ms) {
    zmq_setsockopt(link->dealer, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_setsockopt(link->dealer, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
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
    zmq_setsockopt(link->dealer, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    zmq_setsockopt(link->dealer, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
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
    if (link->dealer) {
        if (link->connected) send_to_child(link, &quit_marker, 1);
        zmq_close(link->dealer);
    }
    if (link->context) zmq_ctx_term(link->context);
    free(link);
}

int bench_zmq_tcp_child_serve(int curve, int idle_timeout_ms) {
    void *context = zmq_ctx_new();
    void *router = make_socket(context, ZMQ_ROUTER, TCP_LINK_TIMEOUT_MS);
    int result = router ? 0 : fail();
    int one = 1;
    char public[41] = "-", secret[41];
    if (result == 0 && zmq_setsockopt(router, ZMQ_ROUTER_MANDATORY, &one, sizeof one) != 0) result = fail();
    if (result == 0 && curve &&
        (zmq_curve_keypair(public, secret) != 0 || zmq_setsockopt(router, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
         zmq_setsockopt(router, ZMQ_CURVE_SECRETKEY, secret, 40) != 0)) result = fail();
    char endpoint[64];
    size_t endpoint_size = sizeof endpoint;
    if (result == 0 && (zmq_bind(router, "tcp://127.0.0.1:*") != 0 ||
                        zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &endpoint_size) != 0)) result = fail();
    // The parent reads this line, then connects.
    if (result == 0) {
        printf("%s %s\n", endpoint, public);
        fflush(stdout);
    }
    char peer[256], buffer[PAYLOAD];
    uint64_t count = 0;
    while (result == 0) {
        zmq_pollitem_t item = { router, 0, ZMQ_POLLIN, 0 };
        int ready = zmq_poll(&item, 1, idle_timeout_ms);
        if (ready < 0) { if (zmq_errno() == EINTR) continue; result = fail(); break; }
        if (ready == 0) break;  // the parent is gone or stuck: do not linger
        int peer_size;
        while ((peer_size = zmq_recv(router, peer, sizeof peer, ZMQ_DONTWAIT)) >= 0) {
            int size = zmq_recv(router, buffer, sizeof buffer, 0);
            if (size < 0) { result = fail(); break; }
            const char *reply = NULL;
            size_t reply_size = 0;
            if (size >= 1 && buffer[0] == quit_marker) goto done;
            if (size == 1 && buffer[0] == hello_marker) {
                reply = &hello_marker;
                reply_size = 1;
            } else if (size >= 1 && buffer[0] == ping_marker) {
                reply = buffer;
                reply_size = (size_t)size;
            } else if (size == 1 && buffer[0] == end_marker) {
                reply = (const char *)&count;
                reply_size = sizeof count;
            } else {
                count++;
            }
            if (reply) {
                zmq_send(router, peer, (size_t)peer_size, ZMQ_SNDMORE);
                zmq_send(router, reply, reply_size, 0);
                if (reply == (const char *)&count) count = 0;
            }
        }
    }
done:
    zmq_close(router);
    zmq_ctx_term(context);
    return result;
}
