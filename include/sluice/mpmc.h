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
 * atomic read-modify-writes per side). Messages of 9 to 256 bytes ("swap"
 * form) live in slots, and every cell always holds a slot index: a push
 * copies the message into a spare slot of its own, and its cell CAS swaps
 * that slot in for the free slot the cell held, which becomes its spare;
 * a pop copies the slot out, then takes the cell with its stamp CAS, and the
 * slot stays in the cell for the next lap. Three read-modify-writes per push
 * (one on a spare entry no other thread normally touches), two per pop; a
 * push ends by prefetching, for writing, the slot its next push will fill.
 * Messages over 256 bytes ("indexed" form) keep two rings of slot indices,
 * `free` and `used`: a push takes an index from `free`, copies, and
 * publishes it on `used`, and a pop returns it to `free`.
 *
 * Progress: try_push and try_pop are lock-free in the strict sense, with no
 * bound on the number of threads: a step fails only because another thread's
 * step on the same cell or counter succeeded, and a thread stopped at any
 * instruction holds no cell. In the swap form a stopped push holds one spare
 * slot and a stopped pop holds nothing; in the indexed form either holds at
 * most one slot. Nobody waits for a held slot. See docs/guarantees.md.
 * Order: linearizable FIFO for successful operations, hence FIFO per producer.
 * Full/empty: SL_EMPTY is exact and linearizable: no message was inside at
 * its linearization point. SL_FULL is exact (`capacity` messages inside) in
 * the direct form. With larger messages a slot held by an operation in
 * progress counts as taken: in the swap form SL_FULL with room left needs
 * every one of the `capacity` spare entries the push looked at to have been
 * held, when it looked, by another push between taking a spare and putting
 * one back; in the indexed form, a slot whose producer is still copying in,
 * or whose consumer is still copying out.
 * On SL_EMPTY, try_pop leaves out untouched (the swap form's speculative
 * copy goes through a buffer on the pop's stack).
 * Capacity: exactly what was asked; the ring is `capacity` cells (positions
 * run in laps of a power of two, so no division is needed). Memory: 16 bytes
 * a cell; the swap form adds 2 * capacity slots (each rounded up to whole
 * 8-byte words) and a word per spare; the indexed form capacity slots and a
 * second ring.
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
    /* Producers move the used ring's tail once per line of four cells
     * (after every push in the swap form; channels/cellring.h, "Lazy
     * counters"): one line for the producers' counters, on purpose.
     * Producers never read the consumers' line, nor consumers this one:
     * full and empty are read from the cells. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) tail;
    SL_ATOMIC(uint64_t) free_head;
    /* The swap form's spare slots (messages of 9 to 256 bytes): spare_count
     * words, each a slot index or SL__MPMC_NO_SPARE; NULL in the other
     * forms. Read-only pointers, kept on the producers' line, which every
     * push reads anyway; consumers never need them. */
    SL_ATOMIC(uint64_t) *spares;
    size_t spare_count;
    size_t spare_mask;            /* the power of two above spare_count, less 1 */
    /* Raised by a push that found no spare; the next give-back lowers it and
     * wakes the channel's blocked senders (channels/mpmc_swap.c). */
    SL_ATOMIC(uint32_t) starved;
    /* Consumers advance the used ring's head and the free ring's tail. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) head;
    SL_ATOMIC(uint64_t) free_tail;
    /* Read-only after init. */
    SL_ALIGNAS(SL_CACHELINE) sl_mpmc_cell *used; /* capacity cells */
    sl_mpmc_cell *free;           /* indexed form: slot indices, a cell per slot; else NULL */
    unsigned char *slots;         /* slot_count slots; NULL when direct */
    size_t elem_size;
    size_t capacity;              /* cells of the used ring */
    size_t slot_count;            /* capacity, plus the swap form's or the ring's spares */
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

/* Moves the oldest message into out. Returns SL_OK, SL_EMPTY (out
 * untouched) or SL_EINVAL (NULL q or out). Lock-free.
 * Acts as acquire (pairs with the push); taking the cell (and, indexed,
 * freeing the slot) is a seq_cst read-modify-write, like the push's
 * publication. */
SL_API sl_status sl_mpmc_try_pop(sl_mpmc *q, void *out);

/* Pushes up to n messages in order; returns how many went (0 for NULL q or
 * elems). Lock-free. */
SL_API size_t sl_mpmc_push_n(sl_mpmc *q, const void *elems, size_t n);
/* Pops up to n messages in order into out; returns how many (0 for NULL q or
 * out). Lock-free. */
SL_API size_t sl_mpmc_pop_n(sl_mpmc *q, void *out, size_t n);

/* Messages inside now: a snapshot in [0, capacity], exact when no operation
 * is in progress (a counter may lag its cell by one position meanwhile).
 * 0 for NULL. */
SL_API size_t sl_mpmc_len(const sl_mpmc *q);
/* The capacity given to init; 0 for NULL. */
SL_API size_t sl_mpmc_cap(const sl_mpmc *q);

SL_END_DECLS

#endif /* SLUICE_MPMC_H */
