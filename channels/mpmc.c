/*
 * channels/mpmc.c — the bounded MPMC queue: a ring of stamped cells, each
 * claimed and filled by one compare-and-swap on the cell itself.
 *
 * Positions. A position is lap * one_lap + index, index < capacity, and
 * one_lap the power of two above the capacity: the position after the last
 * index of a lap is the first of the next lap. Head and tail are positions;
 * both only move forward, and the 64-bit counters may wrap (2^64 is a whole
 * number of laps).
 *
 * Cells. Cell `index` serves one position at a time. Its stamp is
 *     p        free for position p: a push at p may write it;
 *     p + 1    written for position p: a pop at p may take it;
 * and taking it at p stamps it p + one_lap, free for the same cell's position
 * in the next lap. one_lap >= 2, so "written for p" and "free for the next
 * lap" never coincide.
 *
 * A push reads the tail t and the stamp s of cell(t):
 *     s == t     one double-width CAS writes (t + 1, value) if the cell is
 *                still (t, old value): the claim and the write are one step;
 *                then it moves the tail to next(t);
 *     s <  t     (then s == t - one_lap + 1) the previous lap's message is
 *                still there: the queue holds `capacity` messages: SL_FULL;
 *     s >  t     another push wrote cell(t) (help: CAS tail t -> next(t)), or
 *                t is stale; read the tail again.
 * A pop reads the head h and the stamp s of cell(h):
 *     s == h + 1 CAS the stamp to h + one_lap, having read the value first
 *                (nobody writes it while the stamp is h + 1); move the head;
 *     s == h     nothing written at h, hence nothing after h: SL_EMPTY;
 *     s >  h + 1 cell(h) was taken (help the head along) or h is stale.
 *
 * Why this is lock-free and linearizable: docs/guarantees.md, "SL_MPMC". In
 * short: the tail passes a position only after its cell is written, and the
 * head only after it is taken, so writes and takes happen in position order;
 * the cell's CAS is both the claim and the publication, so there is never a
 * claimed cell that others must wait for; and every failed CAS or help means
 * another thread's CAS on that cell or counter succeeded.
 *
 * Memory orders: stamps and counters are read and CASed seq_cst (on x86 loads
 * cost nothing extra, and one total order keeps the FULL/EMPTY argument
 * short); the double-width CAS is a full barrier. The value is read relaxed
 * between the stamp's load (which synchronises with the writing CAS) and the
 * taking CAS (before which no one may overwrite it).
 */
#include "sluice/mpmc.h"

#include <stdlib.h>
#include <string.h>

#include "internal/dwcas.h"
#include "internal/testing.h"
#include "rings.h"

/* One ring: its cells and the two counters that index it. */
typedef struct cell_ring {
    sl_mpmc_cell *cells;
    SL_ATOMIC(uint64_t) *head;
    SL_ATOMIC(uint64_t) *tail;
    uint64_t one_lap;
    uint64_t capacity;
} cell_ring;

static inline sl_mpmc_cell *cell_at(const cell_ring *r, uint64_t pos)
{
    return &r->cells[pos & (r->one_lap - 1)];
}

static inline uint64_t next_pos(const cell_ring *r, uint64_t pos)
{
    if ((pos & (r->one_lap - 1)) + 1 < r->capacity)
        return pos + 1;
    return (pos & ~(r->one_lap - 1)) + r->one_lap;
}

/* Moves the counter from pos to the next position unless someone did. */
static inline void advance(const cell_ring *r, SL_ATOMIC(uint64_t) *counter, uint64_t pos)
{
    SL_FI();
    atomic_compare_exchange_strong_explicit(counter, &pos, next_pos(r, pos),
                                            memory_order_seq_cst, memory_order_relaxed);
}

/* Appends value; false when the ring holds `capacity` values. */
static bool ring_push(const cell_ring *r, uint64_t value)
{
    uint64_t t = atomic_load_explicit(r->tail, memory_order_seq_cst);
    for (;;) {
        sl_mpmc_cell *c = cell_at(r, t);
        SL_FI();
        uint64_t s = atomic_load_explicit(&c->stamp, memory_order_seq_cst);
        int64_t d = (int64_t)(s - t);
        if (d == 0) {
            uint64_t old = atomic_load_explicit(&c->value, memory_order_relaxed);
            SL_FI();
#ifdef SL_MUTANT_MPMC_SPLIT_PUBLISH
            /* Planted bug (docs/guarantees.md): claim, then write the value. */
            (void)old;
            if (atomic_compare_exchange_strong(&c->stamp, &s, t + 1)) {
                SL_FI();
                atomic_store_explicit(&c->value, value, memory_order_relaxed);
                advance(r, r->tail, t);
                return true;
            }
#else
            /* Claim and publish in one step (a full barrier: releases the
             * value, and is the condition change a parked receiver pairs with). */
            if (sl__dwcas(c, t, old, t + 1, value)) {
                advance(r, r->tail, t);
                return true;
            }
#endif
        } else if (d < 0) {
            return false; /* the previous lap's value is still in cell(t) */
        } else {
            advance(r, r->tail, t); /* written by another push, or t is stale */
        }
        t = atomic_load_explicit(r->tail, memory_order_seq_cst);
    }
}

/* Removes the oldest value; false when the ring is empty. */
static bool ring_pop(const cell_ring *r, uint64_t *value)
{
    uint64_t h = atomic_load_explicit(r->head, memory_order_seq_cst);
    for (;;) {
        sl_mpmc_cell *c = cell_at(r, h);
        SL_FI();
        uint64_t s = atomic_load_explicit(&c->stamp, memory_order_seq_cst);
        int64_t d = (int64_t)(s - (h + 1));
        if (d == 0) {
            /* Stable while the stamp is h + 1: only the next lap's push
             * writes it, after our CAS below. */
#ifndef SL_MUTANT_MPMC_FREE_BEFORE_READ
            uint64_t v = atomic_load_explicit(&c->value, memory_order_relaxed);
#endif
            SL_FI();
            /* seq_cst: frees the cell for the next lap (our read of the value
             * comes first) and is what a parked sender's re-check pairs with. */
            if (atomic_compare_exchange_strong_explicit(&c->stamp, &s, h + r->one_lap,
                                                        memory_order_seq_cst,
                                                        memory_order_relaxed)) {
#ifdef SL_MUTANT_MPMC_FREE_BEFORE_READ
                /* Planted bug: the cell is free for the next lap already. */
                SL_FI();
                uint64_t v = atomic_load_explicit(&c->value, memory_order_relaxed);
#endif
                advance(r, r->head, h);
                *value = v;
                return true;
            }
        } else if (d < 0) {
            return false; /* nothing written at h, so nothing after it */
        } else {
            advance(r, r->head, h); /* taken by another pop, or h is stale */
        }
        h = atomic_load_explicit(r->head, memory_order_seq_cst);
    }
}

/* Positions from head to tail, counted in values. */
static uint64_t ring_len(const cell_ring *r)
{
    uint64_t h = atomic_load_explicit(r->head, memory_order_seq_cst);
    uint64_t t = atomic_load_explicit(r->tail, memory_order_seq_cst);
    uint64_t mask = r->one_lap - 1;
    int64_t laps = (int64_t)((t & ~mask) - (h & ~mask)) / (int64_t)r->one_lap;
    int64_t n = laps * (int64_t)r->capacity + (int64_t)(t & mask) - (int64_t)(h & mask);
    return n <= 0 ? 0 : (uint64_t)n > r->capacity ? r->capacity : (uint64_t)n;
}

/* ---- the queue's rings ---------------------------------------------------- */

static cell_ring used_ring(const sl_mpmc *q)
{
    sl_mpmc *m = (sl_mpmc *)(uintptr_t)q;
    return (cell_ring){m->used, &m->head, &m->tail, m->one_lap, m->capacity};
}

static cell_ring free_ring(const sl_mpmc *q)
{
    sl_mpmc *m = (sl_mpmc *)(uintptr_t)q;
    return (cell_ring){m->free, &m->free_head, &m->free_tail, m->one_lap, m->capacity};
}

static inline bool is_direct(const sl_mpmc *q) { return q->slots == NULL; }

static uint64_t pow2_above(uint64_t x)
{
    uint64_t p = 2;
    while (p <= x)
        p <<= 1;
    return p;
}

/* Cells free for positions base .. base + capacity - 1 (the first lap), or,
 * with `filled`, written with the slot indices 0 .. capacity - 1. */
static void cells_init(sl_mpmc_cell *cells, size_t capacity, uint64_t base, bool filled)
{
    for (size_t i = 0; i < capacity; i++) {
        atomic_init(&cells[i].stamp, base + i + (filled ? 1 : 0));
        atomic_init(&cells[i].value, filled ? (uint64_t)i : 0);
    }
}

static sl_status alloc_storage(sl_mpmc *q, size_t elem_size, size_t capacity, bool indexed)
{
    /* aligned_alloc wants a size that is a multiple of the alignment (the
     * sanitizers' allocators enforce it): round up to a cache line. */
    size_t ring_bytes = sl__round_to_line(capacity * sizeof(sl_mpmc_cell));
    q->used = aligned_alloc(SL_CACHELINE, ring_bytes);
    if (indexed) {
        q->free = aligned_alloc(SL_CACHELINE, ring_bytes);
        q->slots = aligned_alloc(SL_CACHELINE, sl__round_to_line(capacity * elem_size));
    }
    if (!q->used || (indexed && (!q->free || !q->slots))) {
        free(q->used);
        free(q->free);
        free(q->slots);
        return SL_ENOMEM;
    }
    return SL_OK;
}

sl_status sl__mpmc_init_mode(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start,
                             bool indexed)
{
    if (!q || elem_size == 0 || elem_size > SL_ELEM_MAX || capacity == 0)
        return SL_EINVAL;
    /* Slot indices and positions must fit easily in 64 bits. */
    if (capacity > ((size_t)1 << 40) || capacity > SIZE_MAX / elem_size)
        return SL_EINVAL;
    memset(q, 0, sizeof *q);
    indexed = indexed || elem_size > sizeof(uint64_t);
    sl_status st = alloc_storage(q, elem_size, capacity, indexed);
    if (st != SL_OK) {
        memset(q, 0, sizeof *q);
        return st;
    }
    q->elem_size = elem_size;
    q->capacity = capacity;
    q->one_lap = pow2_above(capacity);
    /* Start on a lap boundary at or below `start` (tests start near 2^64). */
    uint64_t base = start & ~(q->one_lap - 1);
    cells_init(q->used, capacity, base, false);
    atomic_init(&q->head, base);
    atomic_init(&q->tail, base);
    if (indexed) {
        /* The free ring starts full: a whole lap written, its tail one lap on. */
        cells_init(q->free, capacity, base, true);
        atomic_init(&q->free_head, base);
        atomic_init(&q->free_tail, base + q->one_lap);
    }
    return SL_OK;
}

sl_status sl__mpmc_init_at(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start)
{
    return sl__mpmc_init_mode(q, elem_size, capacity, start, false);
}

SL_API sl_status sl_mpmc_init(sl_mpmc *q, size_t elem_size, size_t capacity)
{
    return sl__mpmc_init_mode(q, elem_size, capacity, 0, false);
}

SL_API void sl_mpmc_destroy(sl_mpmc *q)
{
    if (!q)
        return;
    free(q->used);
    free(q->free);
    free(q->slots);
    q->used = q->free = NULL;
    q->slots = NULL;
}

/* ---- the indexed form's four steps, shared with the overwrite ring ------- */

bool sl__mpmc_take_free(sl_mpmc *q, uint64_t *index)
{
    cell_ring r = free_ring(q);
    return ring_pop(&r, index);
}

void sl__mpmc_publish(sl_mpmc *q, uint64_t index)
{
    /* Never full: the used ring has a cell for every slot index. Its CAS
     * publishes the bytes (release) and pairs with a parked receiver. */
    cell_ring r = used_ring(q);
    bool ok = ring_push(&r, index);
    (void)ok;
}

bool sl__mpmc_take_used(sl_mpmc *q, uint64_t *index)
{
    cell_ring r = used_ring(q);
    return ring_pop(&r, index);
}

void sl__mpmc_release(sl_mpmc *q, uint64_t index)
{
    /* Never full, as above. The CAS orders our read of the slot before a
     * producer that takes the index writes it. */
    cell_ring r = free_ring(q);
    bool ok = ring_push(&r, index);
    (void)ok;
}

unsigned char *sl__mpmc_slot(sl_mpmc *q, uint64_t index)
{
    return q->slots + (size_t)index * q->elem_size;
}

/* ---- the public operations ------------------------------------------------ */

SL_API sl_status sl_mpmc_try_push(sl_mpmc *q, const void *elem)
{
    if (!q || !elem)
        return SL_EINVAL;
    if (is_direct(q)) {
        uint64_t v = 0;
        memcpy(&v, elem, q->elem_size);
        cell_ring r = used_ring(q);
        return ring_push(&r, v) ? SL_OK : SL_FULL;
    }
    uint64_t index;
    if (!sl__mpmc_take_free(q, &index))
        return SL_FULL;
    memcpy(sl__mpmc_slot(q, index), elem, q->elem_size);
    SL_FI(); /* holding a slot: others must not wait for us */
    sl__mpmc_publish(q, index);
    return SL_OK;
}

SL_API sl_status sl_mpmc_try_pop(sl_mpmc *q, void *out)
{
    if (!q || !out)
        return SL_EINVAL;
    uint64_t v;
    if (!sl__mpmc_take_used(q, &v))
        return SL_EMPTY;
    if (is_direct(q)) {
        memcpy(out, &v, q->elem_size);
        return SL_OK;
    }
    memcpy(out, sl__mpmc_slot(q, v), q->elem_size);
    SL_FI();
    sl__mpmc_release(q, v);
    return SL_OK;
}

void sl__mpmc_drain(sl_mpmc *q, sl_visit_fn fn, void *ctx)
{
    uint64_t v;
    while (sl__mpmc_take_used(q, &v)) {
        if (is_direct(q)) {
            fn(&v, ctx);
            continue;
        }
        fn(sl__mpmc_slot(q, v), ctx);
        sl__mpmc_release(q, v);
    }
}

SL_API size_t sl_mpmc_push_n(sl_mpmc *q, const void *elems, size_t n)
{
    const unsigned char *p = elems;
    size_t done = 0;
    if (!q || !elems)
        return 0;
    while (done < n && sl_mpmc_try_push(q, p + done * q->elem_size) == SL_OK)
        done++;
    return done;
}

SL_API size_t sl_mpmc_pop_n(sl_mpmc *q, void *out, size_t n)
{
    unsigned char *p = out;
    size_t done = 0;
    if (!q || !out)
        return 0;
    while (done < n && sl_mpmc_try_pop(q, p + done * q->elem_size) == SL_OK)
        done++;
    return done;
}

SL_API size_t sl_mpmc_len(const sl_mpmc *q)
{
    if (!q)
        return 0;
    cell_ring r = used_ring(q);
    return (size_t)ring_len(&r);
}

SL_API size_t sl_mpmc_cap(const sl_mpmc *q) { return q ? q->capacity : 0; }
