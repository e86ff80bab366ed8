// A timer change in C with a timer object per timer, as a C library with a
// public timer type keeps them (libevent's events, libuv's handles): each
// timer a malloc'd record of RunLoopKit's Timer's size that knows its place
// in the heap, the heap an array of entries that hold the instant and the
// timer, the caller an array of its timers. The same mix of changes as
// rlk-bench's `timer-change-*` rows make through the public API: a random
// timer removed and freed, a new one allocated and inserted, a random
// timer's instant moved. What it shows beside `bench_timer_heap_changes`
// (three index arrays, 1.6 MB at 100,000 timers): what touching a timer
// object among many costs on this host, whatever the heap
// (docs/performance.md, "Timers").
#define _GNU_SOURCE
#include "CBenchPeers.h"
#include "far_instant.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/// 96 bytes, as a RunLoopKit Timer: the instant, the place, a callback and
/// its context, the repeat interval, and the rest a timer type carries
/// (flags, a tolerance, a reference count, the loop it belongs to).
struct object_timer {
    uint64_t instant;
    int place;
    int flags;
    void (*callback)(void *);
    void *context;
    uint64_t interval;
    uint64_t tolerance;
    uint64_t references;
    void *loop;
    uint64_t spare[4];
};
_Static_assert(sizeof(struct object_timer) == 96, "a timer object of RunLoopKit's Timer's size");

struct object_entry {
    uint64_t instant;
    struct object_timer *timer;
};

struct object_heap {
    struct object_entry *entries;
    int count;
};

static void nothing(void *context) { (void)context; }

/// About seven instructions a round on registers alone, touching no memory:
/// the rest of what a change does in a library whose change takes more
/// instructions than its heap's. 750 rounds give a removal, an insertion
/// and a move about as many instructions as RunLoopKit's
/// (`TimerChurn.objectHeapWorkRounds`). The empty asm keeps the compiler
/// from folding the loop away.
static void independent_work(int rounds) {
    unsigned long a = 0, b = 0, c = 0, d = 0;
    for (int k = 0; k < rounds; k++) {
        a += (unsigned long)k; b ^= (unsigned long)k; c += a; d ^= b;
        __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
    }
}

static void place_at(struct object_heap *h, int i, struct object_entry entry) {
    h->entries[i] = entry;
    entry.timer->place = i;
}

static void object_sift_up(struct object_heap *h, int i) {
    struct object_entry moving = h->entries[i];
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (h->entries[parent].instant <= moving.instant) break;
        place_at(h, i, h->entries[parent]);
        i = parent;
    }
    place_at(h, i, moving);
}

static void object_sift_down(struct object_heap *h, int i) {
    struct object_entry moving = h->entries[i];
    for (;;) {
        int left = 2 * i + 1, right = left + 1, first = left;
        if (left >= h->count) break;
        if (right < h->count && h->entries[right].instant < h->entries[left].instant) first = right;
        if (moving.instant <= h->entries[first].instant) break;
        place_at(h, i, h->entries[first]);
        i = first;
    }
    place_at(h, i, moving);
}

/// After entry `i` changed its instant, or took the last one's place.
static void object_resift(struct object_heap *h, int i) {
    if (i > 0 && h->entries[i].instant < h->entries[(i - 1) / 2].instant) {
        object_sift_up(h, i);
    } else {
        object_sift_down(h, i);
    }
}

static void object_insert(struct object_heap *h, struct object_timer *timer) {
    int i = h->count++;
    place_at(h, i, (struct object_entry){ timer->instant, timer });
    object_sift_up(h, i);
}

static void object_remove(struct object_heap *h, struct object_timer *timer) {
    int i = timer->place, last = --h->count;
    timer->place = -1;
    if (i == last) return;
    place_at(h, i, h->entries[last]);
    object_resift(h, i);
}

static void object_move(struct object_heap *h, struct object_timer *timer, uint64_t instant) {
    timer->instant = instant;
    h->entries[timer->place].instant = instant;
    object_resift(h, timer->place);
}

static struct object_timer *object_timer_made(uint64_t instant) {
    struct object_timer *timer = calloc(1, sizeof *timer);
    if (timer) {
        timer->instant = instant;
        timer->callback = nothing;
        timer->references = 1;
    }
    return timer;
}

int bench_timer_object_heap_changes(int count, int changes, int work_rounds, uint64_t *nanoseconds) {
    struct object_heap h = { calloc((size_t)count, sizeof(struct object_entry)), 0 };
    struct object_timer **timers = calloc((size_t)count, sizeof *timers);
    int result = 0;
    if (!h.entries || !timers) { result = -ENOMEM; goto done; }
    unsigned seed = 7;
    uint64_t start = bench_now_ns();
    for (int i = 0; i < count; i++) {
        if (!(timers[i] = object_timer_made(far_instant(start, &seed)))) { result = -ENOMEM; goto done; }
        object_insert(&h, timers[i]);
    }
    uint64_t before = bench_now_ns();
    // As RLKTimerChanges: a removal and an insertion, then a move: three changes.
    int made = 0;
    for (; made < changes; made += 3) {
        independent_work(work_rounds);
        int victim = rand_r(&seed) % count;
        object_remove(&h, timers[victim]);
        free(timers[victim]);
        if (!(timers[victim] = object_timer_made(far_instant(before, &seed)))) { result = -ENOMEM; goto done; }
        object_insert(&h, timers[victim]);
        object_move(&h, timers[rand_r(&seed) % count], far_instant(before, &seed));
    }
    *nanoseconds = bench_now_ns() - before;
    result = made;
done:
    if (timers) {
        for (int i = 0; i < count; i++) free(timers[i]);
    }
    free(timers);
    free(h.entries);
    return result;
}
