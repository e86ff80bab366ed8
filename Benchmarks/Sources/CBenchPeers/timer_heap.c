// The floor for timers at scale: a bare timerfd + epoll loop in C whose
// timers live in a binary min-heap (with each timer's position, so that a
// timer can be removed in O(log n)), under the load of rlk-bench's
// timer-churn rows (see CBenchPeers.h): many far timers, a churn timer that
// removes one and adds one every interval, and probe timers whose lateness
// is measured.
#define _GNU_SOURCE
#include "CBenchPeers.h"
#include "far_instant.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct heap {
    uint64_t *instant;   // by slot
    int *slot_at;        // heap index -> slot
    int *position;       // slot -> heap index, -1 when out
    int count;
};

static int precedes(struct heap *h, int a, int b) { return h->instant[h->slot_at[a]] < h->instant[h->slot_at[b]]; }

static void swap_at(struct heap *h, int a, int b) {
    int sa = h->slot_at[a], sb = h->slot_at[b];
    h->slot_at[a] = sb; h->slot_at[b] = sa;
    h->position[sb] = a; h->position[sa] = b;
}

static int sift_up(struct heap *h, int i) {
    int start = i;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!precedes(h, i, parent)) break;
        swap_at(h, i, parent);
        i = parent;
    }
    return i != start;
}

static void sift_down(struct heap *h, int i) {
    for (;;) {
        int left = 2 * i + 1, right = left + 1, first = i;
        if (left < h->count && precedes(h, left, first)) first = left;
        if (right < h->count && precedes(h, right, first)) first = right;
        if (first == i) return;
        swap_at(h, i, first);
        i = first;
    }
}

static void heap_insert(struct heap *h, int slot, uint64_t instant) {
    h->instant[slot] = instant;
    h->slot_at[h->count] = slot;
    h->position[slot] = h->count;
    h->count++;
    sift_up(h, h->count - 1);
}

static void heap_remove(struct heap *h, int slot) {
    int i = h->position[slot];
    if (i < 0) return;
    int last = h->count - 1;
    if (i != last) swap_at(h, i, last);
    h->count--;
    h->position[slot] = -1;
    if (i < h->count && !sift_up(h, i)) sift_down(h, i);
}

static int heap_init(struct heap *h, int slots) {
    h->instant = calloc((size_t)slots, sizeof(uint64_t));
    h->slot_at = calloc((size_t)slots, sizeof(int));
    h->position = malloc((size_t)slots * sizeof(int));
    h->count = 0;
    if (!h->instant || !h->slot_at || !h->position) return -ENOMEM;
    for (int i = 0; i < slots; i++) h->position[i] = -1;
    return 0;
}

static void heap_free(struct heap *h) {
    free(h->instant);
    free(h->slot_at);
    free(h->position);
}


// The churn loop of both entry points below: until `probes` probes fired
// (bench_timer_churn) or the churn timer fired `churn_fires` times
// (bench_timer_churn_passes, no probes). Returns the probes fired or the
// churn fires made, or -errno.
static int churn_loop(int far_count, uint64_t interval, int probes, int window_ms, int churn_fires,
                      uint64_t *lateness_ns, int *changes_out) {
    // Slots: far timers, then the churn timer, then the probes.
    int churn = far_count, first_probe = far_count + 1, slots = far_count + 1 + probes;
    struct heap h;
    if (heap_init(&h, slots) != 0) return -ENOMEM;
    unsigned seed = 42;
    uint64_t start = now_ns();
    for (int i = 0; i < far_count; i++) heap_insert(&h, i, far_instant(start, &seed));
    uint64_t lead = 200000000ull;  // 0.2 s, as the Swift side
    heap_insert(&h, churn, start + interval);
    // Each probe at a random point of its share of the window, as the
    // Swift side's (TimerChurnLoad.probes): not on the churn's grid.
    uint64_t share = probes > 0 ? (uint64_t)window_ms * 1000000ull / (uint64_t)probes : 0;
    for (int i = 0; i < probes; i++) {
        uint64_t jitter = share > 0 ? (uint64_t)rand_r(&seed) % share : 0;
        heap_insert(&h, first_probe + i, start + lead + share * (uint64_t)i + jitter);
    }
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (tfd < 0 || ep < 0) {
        heap_free(&h);
        if (tfd >= 0) close(tfd);
        if (ep >= 0) close(ep);
        return -errno;
    }
    struct epoll_event event = { .events = EPOLLIN, .data.u32 = 0 };
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &event);
    int fired_probes = 0, fires = 0, changes = 0, result = 0;
    uint64_t give_up = start + lead + (uint64_t)window_ms * 1000000ull + 30000000000ull + (uint64_t)churn_fires * 1000000ull;
    while (churn_fires > 0 ? fires < churn_fires : fired_probes < probes) {
        uint64_t next = h.instant[h.slot_at[0]];
        struct itimerspec spec = { .it_value = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) } };
        if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
        timerfd_settime(tfd, TFD_TIMER_ABSTIME, &spec, NULL);
        struct epoll_event ready;
        int n = epoll_wait(ep, &ready, 1, 1000);
        if (n < 0 && errno != EINTR) { result = -errno; break; }
        uint64_t expirations;
        if (n > 0) (void)!read(tfd, &expirations, sizeof expirations);
        uint64_t now = now_ns();
        if (now > give_up) { result = -ETIMEDOUT; break; }
        while (h.count > 0 && h.instant[h.slot_at[0]] <= now) {
            int slot = h.slot_at[0];
            uint64_t due = h.instant[slot];
            heap_remove(&h, slot);
            if (slot == churn) {
                // One far timer out, one in; the churn timer's next period.
                int victim = rand_r(&seed) % far_count;
                heap_remove(&h, victim);
                heap_insert(&h, victim, far_instant(now, &seed));
                changes += 2;
                fires += 1;
                uint64_t after = due + interval;
                if (after <= now) after = now + interval - (now - due) % interval;
                heap_insert(&h, churn, after);
            } else if (slot >= first_probe) {
                lateness_ns[fired_probes++] = now_ns() - due;
            }
        }
    }
    close(tfd);
    close(ep);
    heap_free(&h);
    *changes_out = changes;
    return result < 0 ? result : churn_fires > 0 ? fires : fired_probes;
}

int bench_timer_churn(int far_count, int churn_interval_us, int probes, int window_ms,
                      uint64_t *lateness_ns, int *changes_out) {
    return churn_loop(far_count, (uint64_t)churn_interval_us * 1000ull, probes, window_ms, 0, lateness_ns, changes_out);
}

int bench_timer_churn_passes(int far_count, int fires, int *changes_out) {
    // Every microsecond: always due when the loop comes round again.
    return churn_loop(far_count, 1000ull, 0, 0, fires, NULL, changes_out);
}

int bench_timer_heap_changes(int count, int changes, uint64_t *nanoseconds) {
    struct heap h;
    if (heap_init(&h, count) != 0) return -ENOMEM;
    unsigned seed = 7;
    uint64_t start = now_ns();
    for (int i = 0; i < count; i++) heap_insert(&h, i, far_instant(start, &seed));
    uint64_t before = now_ns();
    for (int i = 0; i < changes / 2; i++) {
        int victim = rand_r(&seed) % count;
        heap_remove(&h, victim);
        heap_insert(&h, victim, far_instant(before, &seed));
    }
    *nanoseconds = now_ns() - before;
    heap_free(&h);
    return 0;
}
