// What the C timer heaps share (timer_heap.c, timer_object_heap.c): the
// instant of a far timer of rlk-bench's timer load. Private to CBenchPeers
// (outside include/, so Swift never sees it).
#ifndef CBENCHPEERS_FAR_INSTANT_H
#define CBENCHPEERS_FAR_INSTANT_H
#include <stdint.h>
#include <stdlib.h>

/// A far timer's instant: 10 to 20 s from `now` (ns), in steps of 1 ms.
static inline uint64_t far_instant(uint64_t now, unsigned *seed) {
    return now + 10000000000ull + (uint64_t)(rand_r(seed) % 10000) * 1000000ull;
}

#endif
