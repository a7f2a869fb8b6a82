/*
 * sluice/ring.h — the raw overwrite ring (SL_RING): bounded, never refuses a
 * send, displaces the oldest message instead.
 *
 * For latest-value telemetry and logging that must never block its producer:
 * any number of producers and consumers; when the ring is full a push
 * displaces the oldest message and hands it to the caller.
 *
 *   | operation        | may run concurrently with         |
 *   |------------------|-----------------------------------|
 *   | try_push, try_pop, pop_n, len, cap | everything except init/destroy |
 *   | init, destroy    | nothing                           |
 *
 * Algorithm: the slots and the two SCQ index rings of sluice/mpmc.h, sized
 * capacity + SL_RING_SPARE, plus `count`, the number of published messages not
 * yet claimed by a taker. A push publishes its message, adds one to `count`,
 * and if that took `count` above the capacity it claims the oldest message and
 * displaces it. A pop claims one unit of `count` (a CAS that never goes below
 * zero), then takes the oldest message, which the claim guarantees is there.
 *
 * Progress: lock-free while fewer than SL_RING_SPARE operations are in
 * progress at once (each holds at most one spare slot); with more, a push may
 * wait for one of them to finish. Never SL_FULL, never fails.
 * Order: FIFO per producer (the used ring is linearizable FIFO).
 * Accounting: every message pushed is, exactly once, popped, displaced (handed
 * to the pushing caller), or left for destroy.
 * Capacity: at rest the ring holds at most `capacity` messages. A message a
 * consumer has claimed but not yet copied out no longer counts.
 */
#ifndef SLUICE_RING_H
#define SLUICE_RING_H

#include "sluice/base.h"
#include "sluice/mpmc.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

/* Slots beyond the capacity: a push in progress holds one while the ring is
 * full. */
#define SL_RING_SPARE 128

typedef struct sl_ring {
    sl_mpmc slots;                                  /* capacity + SL_RING_SPARE */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(int64_t) count; /* published, unclaimed */
    size_t capacity;
} sl_ring;

/* Initialises r for capacity messages of elem_size bytes. Returns SL_OK;
 * SL_EINVAL for NULL r, elem_size 0 or above SL_ELEM_MAX, capacity 0 or too
 * large; SL_ENOMEM. */
SL_API sl_status sl_ring_init(sl_ring *r, size_t elem_size, size_t capacity);

/* Frees the storage; messages inside are discarded unseen. NULL is fine. */
SL_API void sl_ring_destroy(sl_ring *r);

/* Copies one message in. Returns SL_EINVAL for NULL r or elem; SL_OK; or
 * SL_EVICTED when the ring was full:
 * the oldest message was displaced and copied to `evicted` (elem_size bytes;
 * NULL discards it). Lock-free (see above); acts as release, publishing with a
 * seq_cst RMW. */
SL_API sl_status sl_ring_try_push(sl_ring *r, const void *elem, void *evicted);

/* Moves the oldest message into out. Returns SL_OK, SL_EMPTY, or SL_EINVAL
 * for NULL r or out. Lock-free; acts as acquire. */
SL_API sl_status sl_ring_try_pop(sl_ring *r, void *out);

/* Pops up to n messages in order; returns how many. */
SL_API size_t sl_ring_pop_n(sl_ring *r, void *out, size_t n);

/* Messages inside and unclaimed: a snapshot in [0, capacity]. */
SL_API size_t sl_ring_len(const sl_ring *r);
/* The capacity given to init. */
SL_API size_t sl_ring_cap(const sl_ring *r);

SL_END_DECLS

#endif /* SLUICE_RING_H */
