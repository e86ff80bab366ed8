#ifndef RLK_TAP_RING_H
#define RLK_TAP_RING_H
// The port tap's event ring: where threads that send and receive put one
// fixed-size record per event, without a lock, an allocation or a system
// call, and the tap thread takes them in order (docs/tap-format.md).
#include <stdint.h>
#include <stddef.h>

/// One tap event as the tap's wire format carries it: 120 bytes,
/// little-endian, the same bytes in the ring and on the wire (the record
/// section of docs/tap-format.md gives each field's meaning).
typedef struct rlk_tap_record {
    uint64_t seq;              //  0: the event's number in its process, from 1
    int64_t monotonic_ns;      //  8: CLOCK_MONOTONIC when it happened
    uint64_t trace;            // 16: pairs a send with its delivery (0: none)
    uint32_t msgid;            // 24
    uint32_t destination;      // 28: the port's tap id (names travel apart)
    uint32_t source;           // 32: the reply port's tap id (0: none)
    int32_t tid;               // 36: the kernel thread id
    uint64_t data_bytes;       // 40: bytes of all data components
    uint32_t first_data_size;  // 48: bytes of the first data component (saturated)
    uint16_t components;       // 52: components (saturated)
    uint16_t port_components;  // 54: port components among them (saturated)
    uint16_t reason;           // 56: tap id of the reason's name (0: none)
    uint8_t kind;              // 58: 1 send, 2 deliver, 3 send failed, 4 message dropped, 5 pass, 6 sleep, 7 callout
    uint8_t flags;             // 59: RLK_TAP_FLAG_*
    uint8_t head_length;       // 60: bytes of `head` used (0...16)
    uint8_t reserved[3];       // 61: zero
    uint8_t head[16];          // 64: the first data component's leading bytes
    // Version 3: a distributed actor's call, reply or cancellation.
    uint64_t call;             // 80: the call's id in its caller's system (0: not an actor message)
    uint64_t actor;            // 88: the actor's number in its system
    uint32_t method;           // 96: tap id of the method's name (a label, kind 3)
    uint8_t call_role;         // 100: RLK_TAP_CALL_*
    uint8_t outcome;           // 101: a reply's outcome: RLK_TAP_OUTCOME_*
    uint8_t reserved2[2];      // 102: zero
    // Version 4: the message's W3C trace context, when it carried one.
    uint8_t w3c_trace_id[16];  // 104: its trace id, in traceparent's byte order (all zero: none)
} rlk_tap_record;

/// What a distributed actor's system tells the tap about the message it is
/// about to send or has just received: copied into the thread's next
/// record of a message (`rlk_tap_call_apply`).
typedef struct rlk_tap_call {
    uint64_t call;
    uint64_t actor;
    uint32_t method;
    uint8_t role;
    uint8_t outcome;
} rlk_tap_call;

enum {
    RLK_TAP_RECORD_SIZE = 120,
    RLK_TAP_HEAD_CAPACITY = 16,
    /// A delivery read in place (`PortMessageView`).
    RLK_TAP_FLAG_IN_PLACE = 2,
    /// A pass (kind 5) that handled a source or a perform request.
    RLK_TAP_FLAG_HANDLED_SOURCE = 4,
    /// `call_role`: a call, its reply, a caller's cancellation.
    RLK_TAP_CALL_CALL = 1,
    RLK_TAP_CALL_REPLY = 2,
    RLK_TAP_CALL_CANCEL = 3,
};

typedef struct rlk_tap_ring rlk_tap_ring;

/// A ring of `1 << capacity_log2` records (10...15). Never freed: one per
/// process, as long as it runs.
rlk_tap_ring *rlk_tap_ring_create(unsigned capacity_log2);

/// Any thread: numbers `record` (sets its seq) and puts it in the ring, or,
/// when the ring is full, counts it dropped: numbered all the same, so that
/// a reader sees the gap. Returns the number. `*wake` is set to 1 when the
/// taking thread asked to be told of the next record (it found the ring
/// empty), else 0. Lock-free: a compare-and-swap, a copy, a store.
uint64_t rlk_tap_ring_put(rlk_tap_ring *ring, rlk_tap_record *record, int *wake);

/// The taker only (one thread at a time: `take`, `request_wake` and
/// `settled` share the reading position, so callers that take from more
/// than one thread serialise all three): copies up to `max` records, oldest first, into
/// `out` and frees their slots. Records come in the order of their numbers.
size_t rlk_tap_ring_take(rlk_tap_ring *ring, rlk_tap_record *out, size_t max);

/// The taker only, once `take` found nothing: asks to be told of
/// the next record (`put`'s `*wake`). Returns 1 if a record came in the
/// meantime (take again; the request stands), 0 if the ring is empty.
int rlk_tap_ring_request_wake(rlk_tap_ring *ring);

/// Events numbered so far (the last number given).
uint64_t rlk_tap_ring_numbered(const rlk_tap_ring *ring);
/// Events dropped so far because the ring was full.
uint64_t rlk_tap_ring_dropped(const rlk_tap_ring *ring);
/// The taker only: the highest number up to which every event has
/// left the ring (taken or dropped), given the number of the last record
/// taken.
uint64_t rlk_tap_ring_settled(const rlk_tap_ring *ring, uint64_t last_taken);

/// The calling thread's kernel thread id, from a thread-local after the
/// first call (a fork's child asks again).
int32_t rlk_tap_thread_id(void);
/// 1 the first time the calling thread asks (and again in a fork's child),
/// 0 after: whether the tap still has to
/// announce the thread's name.
int rlk_tap_thread_is_new(void);

/// The calling thread's actor-call note: set by a distributed actor
/// system around a send (`rlk_tap_call_set`, then `rlk_tap_call_clear`),
/// copied into that send's record by `rlk_tap_call_apply` (a record is
/// left as it is when no note is set).
void rlk_tap_call_set(const rlk_tap_call *call);
void rlk_tap_call_clear(void);
void rlk_tap_call_apply(rlk_tap_record *record);

/// A delivery whose record its port's handler writes (a distributed actor
/// system's ports, which know the call only once they decoded it): the
/// port leaves the delivery's trace id here, the handler takes it.
/// `take` returns 1 and the trace id when one was left since the last take.
void rlk_tap_defer_delivery(uint64_t trace);
int rlk_tap_take_deferred_delivery(uint64_t *trace);

/// The label of the dispatch queue running the calling thread's code ("" if none).
const char *rlk_current_queue_label(void);

#endif
