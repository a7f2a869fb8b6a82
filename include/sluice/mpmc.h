/*
 * sluice/mpmc.h — the raw bounded multi-producer multi-consumer queue (SL_MPMC).
 *
 * A bounded, linearizable FIFO of fixed-size messages for any number of
 * producers and consumers, with no blocking operations: the embeddable form
 * under the SL_MPMC channel.
 *
 *   | operation               | may run concurrently with         |
 *   |-------------------------|-----------------------------------|
 *   | try_push, push_n        | everything except init/destroy    |
 *   | try_pop, pop_n          | everything except init/destroy    |
 *   | len, cap                | everything except init/destroy    |
 *   | init, destroy           | nothing                           |
 *
 * Algorithm: SCQ (Nikolaev, "A Scalable, Portable, and Memory-Efficient
 * Lock-Free FIFO Queue", DISC 2019). Two rings of slot indices — `free` holds
 * the indices of empty message slots, `used` the indices of full ones, in FIFO
 * order. A push takes an index from `free`, copies the message into that slot
 * and enqueues the index on `used`; a pop does the reverse. Each index ring
 * has twice as many entries as indices, which with the paper's threshold makes
 * it lock-free with fetch-and-add on head and tail and single-width CAS only.
 *
 * Progress: try_push and try_pop are lock-free in the strict sense: a thread
 * stopped at any instruction never prevents the others from completing their
 * operations (a stalled producer holds one slot that nobody else waits for; a
 * stalled consumer likewise). See docs/guarantees.md for the argument.
 * Order: linearizable FIFO for successful operations, hence FIFO per producer
 * (a pop owns its message from its fetch-and-add on the used ring's head).
 * Capacity: exactly what was asked (the free ring is filled with that many
 * indices); index rings are rounded up to powers of two.
 * Full/empty: SL_FULL means no free slot could be taken at the linearization
 * point; a slot whose consumer is still copying out counts as taken.
 */
#ifndef SLUICE_MPMC_H
#define SLUICE_MPMC_H

#include "sluice/base.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

/* One SCQ index ring. Head and tail sit on the lines of the sides that
 * advance them (see sl_mpmc); this struct only names their meaning. */
typedef struct sl_scq {
    SL_ATOMIC(uint64_t) *entries; /* 2n entries: cycle | safe bit | index */
    unsigned order;               /* log2(2n) */
} sl_scq;

typedef struct sl_mpmc {
    /* Producers advance free.head and used.tail on every push: one line, so a
     * push owns a single counter line (not padded apart on purpose). */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) free_head;
    SL_ATOMIC(uint64_t) used_tail;
    /* Consumers advance used.head and free.tail on every pop. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) used_head;
    SL_ATOMIC(uint64_t) free_tail;
    /* Thresholds change rarely (only around empty); their own line keeps the
     * reads of the fast path from sharing a line with the hot counters. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(int64_t) used_threshold;
    SL_ATOMIC(int64_t) free_threshold;
    /* Read-only after init. */
    SL_ALIGNAS(SL_CACHELINE) sl_scq free_ring;
    sl_scq used_ring;
    unsigned char *slots;
    size_t elem_size;
    size_t capacity;
    size_t half;                  /* n: indices each ring can hold (power of two) */
} sl_mpmc;

/* Initialises q for capacity messages of elem_size bytes.
 * Returns SL_OK; SL_EINVAL for NULL q, elem_size 0 or above SL_ELEM_MAX,
 * capacity 0 or too large to allocate (storage size overflow); SL_ENOMEM.
 * On failure q needs no destroy. */
SL_API sl_status sl_mpmc_init(sl_mpmc *q, size_t elem_size, size_t capacity);

/* Frees the storage; messages inside are discarded unseen. NULL is fine. */
SL_API void sl_mpmc_destroy(sl_mpmc *q);

/* Copies one message into the queue. Returns SL_OK, SL_FULL (nothing
 * consumed) or SL_EINVAL (NULL q or elem). Lock-free. Acts as release; the publishing step is a seq_cst
 * read-modify-write, so it may directly precede an eventcount notify. */
SL_API sl_status sl_mpmc_try_push(sl_mpmc *q, const void *elem);

/* Moves the oldest message into out. Returns SL_OK, SL_EMPTY or SL_EINVAL
 * (NULL q or out). Lock-free.
 * Acts as acquire (pairs with the push); freeing the slot is a seq_cst
 * read-modify-write, like the push's publication. */
SL_API sl_status sl_mpmc_try_pop(sl_mpmc *q, void *out);

/* Pushes up to n messages in order; returns how many went. Lock-free. */
SL_API size_t sl_mpmc_push_n(sl_mpmc *q, const void *elems, size_t n);
/* Pops up to n messages in order into out; returns how many. Lock-free. */
SL_API size_t sl_mpmc_pop_n(sl_mpmc *q, void *out, size_t n);

/* Messages inside now: a snapshot, at most the capacity. When no operation is
 * in progress it is 0 exactly when the queue is empty; otherwise it may exceed
 * the true count by positions an enqueuer skipped (counted, never filled)
 * until consumers pass them. */
SL_API size_t sl_mpmc_len(const sl_mpmc *q);
/* The capacity given to init. */
SL_API size_t sl_mpmc_cap(const sl_mpmc *q);

SL_END_DECLS

#endif /* SLUICE_MPMC_H */
