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
 * Algorithm: a ring of stamped cells, claimed on the cell itself. Each cell
 * is 16 bytes: a 64-bit stamp saying which position it serves and whether it
 * is written, and an 8-byte value. A push finds the cell of the tail position
 * and, in one double-width compare-and-swap, checks that the cell is free for
 * that position and stores the value with the "written" stamp; only then does
 * it move the tail on (any thread that sees the written cell helps it move).
 * A pop does the same at the head with a single-width CAS of the stamp. There
 * is never a claimed-but-unwritten cell, so nobody ever waits for, or has to
 * step around, a stalled thread (the scheme of Tsigas & Zhang's array queue,
 * with position stamps against ABA as in Vyukov's and crossbeam's rings).
 * Messages of at most 8 bytes live in the cell ("direct" form: one ring, two
 * atomic read-modify-writes per side). Larger messages live in a slot array;
 * two rings of the same kind carry slot indices — `free` and `used` — and a
 * push takes an index from `free`, copies, and publishes it on `used`.
 *
 * Progress: try_push and try_pop are lock-free in the strict sense, with no
 * bound on the number of threads: a step fails only because another thread's
 * step on the same cell or counter succeeded, and a thread stopped at any
 * instruction holds no cell (in the indexed form it holds at most one slot,
 * which nobody waits for). See docs/guarantees.md for the argument.
 * Order: linearizable FIFO for successful operations, hence FIFO per producer.
 * Full/empty: exact and linearizable. SL_FULL means `capacity` messages were
 * inside at the linearization point; SL_EMPTY means none was. In the indexed
 * form (messages over 8 bytes) a slot whose consumer is still copying out, or
 * whose producer is still copying in, counts as taken.
 * Capacity: exactly what was asked; the ring is `capacity` cells (positions
 * run in laps of a power of two, so no division is needed).
 */
#ifndef SLUICE_MPMC_H
#define SLUICE_MPMC_H

#include "sluice/base.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

/* One cell of a ring: the stamp (which position it serves; +1 once written)
 * and the 8-byte value (a message of at most 8 bytes, or a slot index). */
typedef struct sl_mpmc_cell {
    SL_ALIGNAS(16) SL_ATOMIC(uint64_t) stamp;
    SL_ATOMIC(uint64_t) value;
} sl_mpmc_cell;

/* A spare entry whose slot a push in progress holds (the swap form). */
#define SL__MPMC_NO_SPARE UINT64_MAX

typedef struct sl_mpmc {
    /* Producers advance the used ring's tail (and, indexed, the free ring's
     * head) on every push: one line for the producers' counters, on purpose.
     * Producers never read the consumers' line, nor consumers this one:
     * full and empty are read from the cells. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) tail;
    SL_ATOMIC(uint64_t) free_head;
    /* The swap form's spare slots (messages of 9 to 256 bytes): spare_count
     * words, each a slot index or SL__MPMC_NO_SPARE; NULL in the other forms. Read-only pointers, kept on the producers' line, which
     * every push reads anyway; consumers never need them. */
    SL_ATOMIC(uint64_t) *spares;
    size_t spare_count;
    size_t spare_mask;            /* the power of two above spare_count, less 1 */
    /* Consumers advance the used ring's head and the free ring's tail. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) head;
    SL_ATOMIC(uint64_t) free_tail;
    /* Read-only after init. */
    SL_ALIGNAS(SL_CACHELINE) sl_mpmc_cell *used; /* capacity cells */
    sl_mpmc_cell *free;           /* slot indices, one cell per slot; NULL when direct */
    unsigned char *slots;         /* slots * elem_size bytes; NULL when direct */
    size_t elem_size;
    size_t capacity;              /* cells of the used ring */
    size_t slot_count;            /* capacity, or more for the overwrite ring's spares */
    uint64_t one_lap;             /* power of two > capacity: positions per lap */
    uint64_t free_one_lap;        /* ... > slot_count */
} sl_mpmc;

/* Initialises q for capacity messages of elem_size bytes.
 * Returns SL_OK; SL_EINVAL for NULL q, elem_size 0 or above SL_ELEM_MAX,
 * capacity 0 or too large to allocate (storage size overflow); SL_ENOMEM.
 * On failure q needs no destroy. */
SL_API sl_status sl_mpmc_init(sl_mpmc *q, size_t elem_size, size_t capacity);

/* Frees the storage; messages inside are discarded unseen. NULL is fine. */
SL_API void sl_mpmc_destroy(sl_mpmc *q);

/* Copies one message into the queue. Returns SL_OK, SL_FULL (nothing
 * consumed) or SL_EINVAL (NULL q or elem). Lock-free. Acts as release; the
 * publishing step is a seq_cst read-modify-write (the cell's CAS), so it may
 * directly precede an eventcount notify. */
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

/* Messages inside now: a snapshot in [0, capacity], exact when no operation
 * is in progress (a counter may lag its cell by one position meanwhile). */
SL_API size_t sl_mpmc_len(const sl_mpmc *q);
/* The capacity given to init. */
SL_API size_t sl_mpmc_cap(const sl_mpmc *q);

SL_END_DECLS

#endif /* SLUICE_MPMC_H */
