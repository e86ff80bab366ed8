#define _GNU_SOURCE
#include "TapRing.h"
#include "CLinuxSupport.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <assert.h>

// The layout is the wire format's: checked here so that a change to the
// struct cannot slip past docs/tap-format.md.
_Static_assert(sizeof(rlk_tap_record) == RLK_TAP_RECORD_SIZE, "rlk_tap_record is 120 bytes");
_Static_assert(offsetof(rlk_tap_record, w3c_trace_id) == 104, "record layout");
_Static_assert(offsetof(rlk_tap_record, monotonic_ns) == 8, "record layout");
_Static_assert(offsetof(rlk_tap_record, msgid) == 24, "record layout");
_Static_assert(offsetof(rlk_tap_record, tid) == 36, "record layout");
_Static_assert(offsetof(rlk_tap_record, data_bytes) == 40, "record layout");
_Static_assert(offsetof(rlk_tap_record, components) == 52, "record layout");
_Static_assert(offsetof(rlk_tap_record, reason) == 56, "record layout");
_Static_assert(offsetof(rlk_tap_record, kind) == 58, "record layout");
_Static_assert(offsetof(rlk_tap_record, call) == 80, "record layout");
_Static_assert(offsetof(rlk_tap_record, method) == 96, "record layout");
_Static_assert(offsetof(rlk_tap_record, call_role) == 100, "record layout");
_Static_assert(offsetof(rlk_tap_record, head) == 64, "record layout");

// A bounded ring of many writers and one reader. Its state is one 64-bit
// word: the events numbered so far in the high 48 bits, and the position
// of the next free slot, modulo 2^16, in the low 16. A writer claims a
// slot and its number with one compare-and-swap that advances both; when
// the ring is full it advances the number alone, so the event is numbered
// and dropped in one atomic step, and the records in the ring stay in the
// order of their numbers (a reader tells a drop by the gap). Each slot has
// a turn, also modulo 2^16: equal to a position when the slot is free for
// it, one past it once that position's record is written. With at most
// 2^15 slots, the turns a writer can meet (one lap behind, claimed or
// written, or free) stay distinct modulo 2^16. 48 bits of numbers last
// nine years at a million events a second.
struct rlk_tap_ring {
    _Atomic uint64_t state;
    char pad0[56];
    // Set by the reader when it found the ring empty: the next writer
    // wakes it.
    _Atomic int wake_requested;
    char pad1[60];
    _Atomic uint64_t dropped;
    char pad2[56];
    uint64_t consumer;  // the reader's next position (the reader's alone: callers serialise take, settled and request_wake)
    uint32_t capacity;
    uint32_t mask;
    _Atomic uint16_t *turns;
    rlk_tap_record *slots;
};

rlk_tap_ring *rlk_tap_ring_create(unsigned capacity_log2) {
    if (capacity_log2 < 10) capacity_log2 = 10;
    if (capacity_log2 > 15) capacity_log2 = 15;
    // posix_memalign: aligned_alloc wants a size that is a multiple of the alignment.
    void *memory = NULL;
    if (posix_memalign(&memory, 64, sizeof(rlk_tap_ring)) != 0) return NULL;
    rlk_tap_ring *ring = memory;
    memset(ring, 0, sizeof *ring);
    ring->capacity = 1u << capacity_log2;
    ring->mask = ring->capacity - 1;
    ring->turns = calloc(ring->capacity, sizeof(_Atomic uint16_t));
    void *slots = NULL;
    ring->slots = posix_memalign(&slots, 64, (size_t)ring->capacity * sizeof(rlk_tap_record)) == 0 ? slots : NULL;
    if (!ring->turns || !ring->slots) {
        free(ring->turns);
        free(ring->slots);
        free(ring);
        return NULL;
    }
    for (uint32_t i = 0; i < ring->capacity; i++) atomic_init(&ring->turns[i], (uint16_t)i);
    atomic_init(&ring->state, 0);
    atomic_init(&ring->wake_requested, 1);
    atomic_init(&ring->dropped, 0);
    return ring;
}

uint64_t rlk_tap_ring_put(rlk_tap_ring *ring, rlk_tap_record *record, int *wake) {
    *wake = 0;
    uint64_t state = atomic_load_explicit(&ring->state, memory_order_relaxed);
    for (;;) {
        uint16_t position = (uint16_t)state;
        uint64_t number = (state >> 16) + 1;
        _Atomic uint16_t *turn = &ring->turns[position & ring->mask];
        if (atomic_load_explicit(turn, memory_order_acquire) == position) {
            uint64_t claimed = (number << 16) | (uint16_t)(position + 1);
            if (atomic_compare_exchange_weak_explicit(&ring->state, &state, claimed, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                record->seq = number;
                // The slots ahead were last read by the taking thread, on
                // another CPU: ask for them now, so that the stores to come
                // find them here instead of waiting for them.
                __builtin_prefetch(&ring->slots[(position + 8) & ring->mask], 1, 3);
                ring->slots[position & ring->mask] = *record;
                atomic_store_explicit(turn, (uint16_t)(position + 1), memory_order_release);
                // Dekker with the reader's request: either the reader, after
                // asking, sees this record, or this writer sees the request.
                atomic_thread_fence(memory_order_seq_cst);
                if (atomic_load_explicit(&ring->wake_requested, memory_order_relaxed) &&
                    atomic_exchange_explicit(&ring->wake_requested, 0, memory_order_relaxed)) {
                    *wake = 1;
                }
                return number;
            }
        } else {
            // The slot still holds the record of one lap before (or a
            // stale state: then the swap fails and the loop reads again).
            uint64_t numbered = (number << 16) | position;
            if (atomic_compare_exchange_weak_explicit(&ring->state, &state, numbered, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                atomic_fetch_add_explicit(&ring->dropped, 1, memory_order_relaxed);
                return number;
            }
        }
    }
}

size_t rlk_tap_ring_take(rlk_tap_ring *ring, rlk_tap_record *out, size_t max) {
    size_t taken = 0;
    while (taken < max) {
        uint64_t position = ring->consumer;
        _Atomic uint16_t *turn = &ring->turns[position & ring->mask];
        if (atomic_load_explicit(turn, memory_order_acquire) != (uint16_t)(position + 1)) break;
        out[taken++] = ring->slots[position & ring->mask];
        atomic_store_explicit(turn, (uint16_t)(position + ring->capacity), memory_order_release);
        ring->consumer = position + 1;
    }
    return taken;
}

int rlk_tap_ring_request_wake(rlk_tap_ring *ring) {
    atomic_store_explicit(&ring->wake_requested, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t position = ring->consumer;
    return atomic_load_explicit(&ring->turns[position & ring->mask], memory_order_acquire) == (uint16_t)(position + 1);
}

uint64_t rlk_tap_ring_numbered(const rlk_tap_ring *ring) {
    return atomic_load_explicit(&((rlk_tap_ring *)ring)->state, memory_order_relaxed) >> 16;
}

uint64_t rlk_tap_ring_dropped(const rlk_tap_ring *ring) {
    return atomic_load_explicit(&((rlk_tap_ring *)ring)->dropped, memory_order_relaxed);
}

uint64_t rlk_tap_ring_settled(const rlk_tap_ring *ring, uint64_t last_taken) {
    uint64_t state = atomic_load_explicit(&((rlk_tap_ring *)ring)->state, memory_order_acquire);
    // Every slot claimed has been taken: every number given left the ring.
    if ((uint16_t)state == (uint16_t)ring->consumer) return state >> 16;
    return last_taken;
}

// The thread's tid and whether its name was announced, per thread; a
// fork's child forgets the forking thread's (its tid is the child's pid).
static __thread int32_t tap_tid;
static __thread int tap_announced;
static pthread_once_t tap_fork_once = PTHREAD_ONCE_INIT;
static void tap_forget(void) { tap_tid = 0; tap_announced = 0; }
static void tap_register_fork(void) { pthread_atfork(NULL, NULL, tap_forget); }

int32_t rlk_tap_thread_id(void) {
    if (tap_tid == 0) {
        pthread_once(&tap_fork_once, tap_register_fork);
        tap_tid = rlk_gettid();
    }
    return tap_tid;
}

int rlk_tap_thread_is_new(void) {
    if (tap_announced) return 0;
    tap_announced = 1;
    return 1;
}

// The thread's actor-call note and deferred delivery: set and taken by the
// same thread, around one send or one handler call.
static __thread rlk_tap_call tap_call;
static __thread int tap_call_set;
static __thread uint64_t tap_deferred_trace;
static __thread int tap_deferred;

void rlk_tap_call_set(const rlk_tap_call *call) { tap_call = *call; tap_call_set = 1; }
void rlk_tap_call_clear(void) { tap_call_set = 0; }

void rlk_tap_call_apply(rlk_tap_record *record) {
    if (!tap_call_set) return;
    record->call = tap_call.call;
    record->actor = tap_call.actor;
    record->method = tap_call.method;
    record->call_role = tap_call.role;
    record->outcome = tap_call.outcome;
}

void rlk_tap_defer_delivery(uint64_t trace) { tap_deferred_trace = trace; tap_deferred = 1; }

int rlk_tap_take_deferred_delivery(uint64_t *trace) {
    if (!tap_deferred) return 0;
    tap_deferred = 0;
    *trace = tap_deferred_trace;
    return 1;
}

// libdispatch's, declared here rather than through its headers, which the
// C targets do not see; NULL asks for the current queue's label.
extern const char *dispatch_queue_get_label(void *queue);

const char *rlk_current_queue_label(void) {
    const char *label = dispatch_queue_get_label(NULL);
    return label ? label : "";
}
