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
 * Algorithm: the rings of stamped cells of sluice/mpmc.h. A push into a full
 * ring swaps the oldest message out and its own in with the same CAS that
 * would have published it, so displacing costs no more than publishing.
 * Messages of at most 8 bytes live in the cells; larger ones in capacity +
 * SL_RING_SPARE slots, whose indices go through the rings.
 *
 * Progress: with messages of at most 8 bytes, lock-free without condition,
 * and nothing ever waits. With larger messages, lock-free while fewer than
 * SL_RING_SPARE operations hold a slot at once (each holds at most one, for
 * the length of a copy, or, on a channel's displacing send, of the drop
 * function that receives the displaced message: a drop that blocks counts
 * against the bound while it runs); beyond that a push yields until one of
 * them is done.
 * Never SL_FULL, never fails.
 * Order: linearizable FIFO; a displaced message is always the oldest.
 * Accounting: every message pushed is, exactly once, popped, displaced (handed
 * to the pushing caller), or left for destroy.
 * Capacity: the ring never holds more than `capacity` messages; a push into a
 * full ring displaces exactly one.
 */
#ifndef SLUICE_RING_H
#define SLUICE_RING_H

#include "sluice/base.h"
#include "sluice/mpmc.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

/* Slots beyond the capacity, for messages over 8 bytes: a push holds one
 * while it copies its message in, a pop while it copies one out. */
#define SL_RING_SPARE 128

typedef struct sl_ring {
    sl_mpmc q; /* used ring of `capacity` cells; capacity + SL_RING_SPARE slots */
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
 * seq_cst RMW (a double-width CAS). */
SL_API sl_status sl_ring_try_push(sl_ring *r, const void *elem, void *evicted);

/* Moves the oldest message into out. Returns SL_OK, SL_EMPTY, or SL_EINVAL
 * for NULL r or out. Lock-free; acts as acquire. */
SL_API sl_status sl_ring_try_pop(sl_ring *r, void *out);

/* Pops up to n messages in order; returns how many (0 for NULL r or out). */
SL_API size_t sl_ring_pop_n(sl_ring *r, void *out, size_t n);

/* Messages inside: a snapshot in [0, capacity]; 0 for NULL. */
SL_API size_t sl_ring_len(const sl_ring *r);
/* The capacity given to init; 0 for NULL. */
SL_API size_t sl_ring_cap(const sl_ring *r);

SL_END_DECLS

#endif /* SLUICE_RING_H */
