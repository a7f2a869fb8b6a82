/*
 * sluice/list.h — the raw unbounded multi-producer multi-consumer list (SL_LIST).
 *
 * An unbounded FIFO of fixed-size messages for any number of producers and
 * consumers, with no blocking operations: the embeddable form under the
 * SL_LIST channel. Messages live in linked segments of many slots: one
 * allocation per segment, never one per message.
 *
 *   | operation               | may run concurrently with         |
 *   |-------------------------|-----------------------------------|
 *   | try_push, push_n        | everything except init/destroy    |
 *   | try_pop, pop_n          | everything except init/destroy    |
 *   | len                     | everything except init/destroy    |
 *   | init, destroy           | nothing                           |
 *
 * Algorithm: the segment-array queue of Correia & Ramalhete (FAAArrayQueue,
 * 2016), with message bytes stored inline. A push claims a slot of the tail
 * segment with fetch-and-add, writes the bytes, and publishes them with a CAS
 * of the slot's state from EMPTY to FULL. A pop claims a slot of the head
 * segment with fetch-and-add and exchanges its state to TAKEN: if it was FULL
 * the message is the pop's; if it was still EMPTY the slot is poisoned and the
 * late push retries on a later slot. Nobody ever waits for another thread.
 *
 * Progress: try_push and try_pop are lock-free; a thread stopped anywhere
 * delays nobody. try_push fails only with SL_ENOMEM (a new segment could not
 * be allocated; nothing consumed).
 * Order: linearizable FIFO, hence FIFO per producer.
 * Memory: segments that every consumer has passed are reclaimed with RCU
 * (liburcu's urcu-bp flavour, which needs no thread registration), so a slow
 * consumer may still read a segment that has been unlinked. After a burst is
 * drained the list holds one or two segments.
 */
#ifndef SLUICE_LIST_H
#define SLUICE_LIST_H

#include "sluice/base.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

typedef struct sl_list_seg sl_list_seg; /* private */

typedef struct sl_list {
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(sl_list_seg *) head; /* consumers' segment */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(sl_list_seg *) tail; /* producers' segment */
    /* Read-only after init, apart from the segment accounting. */
    SL_ALIGNAS(SL_CACHELINE) size_t elem_size;
    size_t seg_slots;                     /* slots per segment */
    sl_list_seg *oldest;                  /* first segment ever, in builds that
                                             free unlinked segments only at destroy */
    SL_ATOMIC(uint64_t) segs_live;        /* allocated and not yet freed */
    SL_ATOMIC(uint64_t) segs_retiring;    /* unlinked, waiting for a grace period */
} sl_list;

/* Initialises q for messages of elem_size bytes. Returns SL_OK; SL_EINVAL for
 * NULL q or elem_size 0 or above SL_ELEM_MAX; SL_ENOMEM. */
SL_API sl_status sl_list_init(sl_list *q, size_t elem_size);

/* Waits for q's segments in reclamation, then frees everything; messages
 * inside are discarded unseen. NULL is fine. No other thread may use q. */
SL_API void sl_list_destroy(sl_list *q);

/* Appends one message. Returns SL_OK, SL_ENOMEM (nothing consumed), or
 * SL_EINVAL for NULL q or elem.
 * Lock-free; acts as release, and the publishing step is a seq_cst RMW. */
SL_API sl_status sl_list_try_push(sl_list *q, const void *elem);

/* Moves the oldest message into out. Returns SL_OK, SL_EMPTY, or SL_EINVAL
 * for NULL q or out. Lock-free;
 * acts as acquire (pairs with the push). */
SL_API sl_status sl_list_try_pop(sl_list *q, void *out);

/* Appends up to n messages in order; returns how many (short only on
 * SL_ENOMEM). Lock-free. */
SL_API size_t sl_list_push_n(sl_list *q, const void *elems, size_t n);
/* Pops up to n messages in order; returns how many. Lock-free. */
SL_API size_t sl_list_pop_n(sl_list *q, void *out, size_t n);

/* Messages inside now: a snapshot; 0 exactly when empty at rest. */
SL_API size_t sl_list_len(const sl_list *q);

/* Segments allocated and not yet freed (including ones waiting for a grace
 * period): what the list costs in memory, in units of segments. */
SL_API size_t sl_list_segments(const sl_list *q);

SL_END_DECLS

#endif /* SLUICE_LIST_H */
