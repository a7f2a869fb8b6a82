/*
 * channels/mpmc.c — the bounded MPMC queue, composed of rings of stamped
 * cells (channels/cellring.h has the algorithm and its argument).
 *
 * Direct form (messages of at most 8 bytes): one ring whose cells hold the
 * messages. Indexed form: a slot array and two rings of slot indices, `free`
 * (starts full, holding every index) and `used` (FIFO of filled slots); both
 * have a cell for every index, so neither is ever full when an index is
 * pushed back. A push takes a free index, copies, and publishes it on `used`;
 * a pop takes the oldest used index, copies out, and returns it to `free`.
 */
#include "sluice/mpmc.h"

#include <stdlib.h>
#include <string.h>

#include "cellring.h"
#include "rings.h"
#include "internal/sysops.h"

/* ---- the queue's rings ---------------------------------------------------- */

static sl__cellring used_ring(const sl_mpmc *q)
{
    sl_mpmc *m = (sl_mpmc *)(uintptr_t)q;
    return (sl__cellring){m->used, &m->head, &m->tail, m->one_lap, m->capacity};
}

static sl__cellring free_ring(const sl_mpmc *q)
{
    sl_mpmc *m = (sl_mpmc *)(uintptr_t)q;
    return (sl__cellring){m->free, &m->free_head, &m->free_tail, m->free_one_lap, m->slot_count};
}


static sl_status alloc_storage(sl_mpmc *q, size_t elem_size, size_t capacity, size_t slots)
{
    q->used = sl__alloc(SL_CACHELINE, capacity * sizeof(sl_mpmc_cell));
    if (slots) {
        q->free = sl__alloc(SL_CACHELINE, slots * sizeof(sl_mpmc_cell));
        q->slots = sl__alloc(SL_CACHELINE, slots * elem_size);
    }
    if (!q->used || (slots && (!q->free || !q->slots))) {
        free(q->used);
        free(q->free);
        free(q->slots);
        return SL_ENOMEM;
    }
    return SL_OK;
}

sl_status sl__mpmc_init_mode(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start,
                             size_t spare)
{
    if (!q || elem_size == 0 || elem_size > SL_ELEM_MAX || capacity == 0)
        return SL_EINVAL;
    /* Slot indices and positions must fit easily in 64 bits. */
    if (capacity > ((size_t)1 << 40) || capacity + spare > SIZE_MAX / elem_size)
        return SL_EINVAL;
    memset(q, 0, sizeof *q);
#ifdef SL_MUTANT_MPMC_CAP_PLUS_ONE
    capacity += 1; /* planted bug: one cell more than asked */
#endif
    size_t slots = elem_size > sizeof(uint64_t) ? capacity + spare : 0;
    sl_status st = alloc_storage(q, elem_size, capacity, slots);
    if (st != SL_OK) {
        memset(q, 0, sizeof *q);
        return st;
    }
    q->elem_size = elem_size;
    q->capacity = capacity;
    q->slot_count = slots;
    q->one_lap = sl__cellring_lap(capacity);
    /* Start on a lap boundary at or below `start` (tests start near 2^64). */
    uint64_t base = start & ~(q->one_lap - 1);
    sl__cellring_init(q->used, capacity, base, false);
    atomic_init(&q->head, base);
    atomic_init(&q->tail, base);
    if (slots) {
        /* The free ring starts full: a whole lap written, its tail one lap on. */
        q->free_one_lap = sl__cellring_lap(slots);
        uint64_t free_base = start & ~(q->free_one_lap - 1);
        sl__cellring_init(q->free, slots, free_base, true);
        atomic_init(&q->free_head, free_base);
        atomic_init(&q->free_tail, free_base + q->free_one_lap);
    }
    return SL_OK;
}

sl_status sl__mpmc_init_at(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start)
{
    return sl__mpmc_init_mode(q, elem_size, capacity, start, 0);
}

SL_API sl_status sl_mpmc_init(sl_mpmc *q, size_t elem_size, size_t capacity)
{
    return sl__mpmc_init_mode(q, elem_size, capacity, 0, 0);
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
    sl__cellring r = free_ring(q);
    return sl__cellring_pop(&r, index);
}

int sl__mpmc_publish(sl_mpmc *q, uint64_t value, bool displace, uint64_t *evicted)
{
    /* The cell's CAS publishes the bytes (release) and is the condition
     * change a parked receiver pairs with. */
    sl__cellring r = used_ring(q);
    return sl__cellring_push(&r, value, displace, evicted);
}

bool sl__mpmc_take_used(sl_mpmc *q, uint64_t *index)
{
    sl__cellring r = used_ring(q);
    return sl__cellring_pop(&r, index);
}

void sl__mpmc_release(sl_mpmc *q, uint64_t index)
{
    /* Never full: the free ring has a cell for every slot. The CAS orders
     * our read of the slot before a producer that takes the index writes it. */
    sl__cellring r = free_ring(q);
    sl__cellring_push(&r, index, false, NULL);
}

unsigned char *sl__mpmc_slot(sl_mpmc *q, uint64_t index)
{
    return q->slots + (size_t)index * q->elem_size;
}

/* ---- the public operations ------------------------------------------------ */

/* Whether a slot index read from a shared ring is out of range. */
static inline __attribute__((always_inline)) bool bad_index(uint64_t index, size_t slot_count)
{
#ifdef SL_MUTANT_SHM_UNBOUNDED_INDEX
    (void)index, (void)slot_count;
    return false; /* planted bug: an index from the segment is used unchecked */
#endif
    return index >= slot_count;
}

/* The push and the pop, written once for the raw queue (`shared` false:
 * its rings and geometry from q) and the shared channel (true: from the
 * view v, with the guarded rings, and every slot index read from a ring
 * checked against slot_count, since the segment may have been corrupted by
 * a peer). `shared` is a constant at every call: the raw queue builds each
 * ring from q's fields where it is used, after any copy, as it did before
 * there was a view (building them first kept them live across the copy:
 * 4 to 23 instructions more per pair). */
#define GEOM(field) (shared ? v->field : q->field)
#define USED() (shared ? v->used : used_ring(q))
#define FREE() (shared ? v->free : free_ring(q))

static inline __attribute__((always_inline)) int ring_push(sl__cellring r, uint64_t w,
                                                           bool shared)
{
    return shared ? sl__cellring_push_guarded(&r, w) : sl__cellring_push(&r, w, false, NULL);
}

static inline __attribute__((always_inline)) bool ring_pop(sl__cellring r, uint64_t *w,
                                                           bool shared)
{
    return shared ? sl__cellring_pop_guarded(&r, w) : sl__cellring_pop(&r, w);
}

static inline __attribute__((always_inline)) sl_status
push_one(const sl_mpmc *q, const sl__mpmc_view *v, const void *elem, bool shared)
{
    if (!GEOM(slots)) {
        uint64_t w = 0;
        memcpy(&w, elem, GEOM(elem_size));
        return ring_push(USED(), w, shared) == 0 ? SL_OK : SL_FULL;
    }
    uint64_t index;
    if (!ring_pop(FREE(), &index, shared))
        return SL_FULL;
    if (shared && bad_index(index, v->slot_count))
        return SL_FULL; /* a corrupted index: dropped, never used */
    unsigned char *slot = GEOM(slots) + (size_t)index * GEOM(elem_size);
#ifdef SL_MUTANT_MPMC_PUBLISH_BEFORE_COPY
    ring_push(USED(), index, shared); /* planted bug: published, then written */
    SL_FI();
    memcpy(slot, elem, GEOM(elem_size));
    return SL_OK;
#endif
    memcpy(slot, elem, GEOM(elem_size));
    SL_FI(); /* holding a slot: others must not wait for us */
    /* Never full: the used ring has a cell for every slot. The cell's CAS
     * publishes the bytes (release) and is the condition change a parked
     * receiver pairs with. */
    ring_push(USED(), index, shared);
    return SL_OK;
}

static inline __attribute__((always_inline)) sl_status
pop_one(const sl_mpmc *q, const sl__mpmc_view *v, void *out, bool shared)
{
    uint64_t w;
    if (!ring_pop(USED(), &w, shared))
        return SL_EMPTY;
    if (!GEOM(slots)) {
        memcpy(out, &w, GEOM(elem_size));
        return SL_OK;
    }
    if (shared && bad_index(w, v->slot_count))
        return SL_EMPTY; /* a corrupted index: dropped, never used */
    unsigned char *slot = GEOM(slots) + (size_t)w * GEOM(elem_size);
#ifdef SL_MUTANT_MPMC_RELEASE_BEFORE_COPY
    ring_push(FREE(), w, shared); /* planted bug: the slot is free before it is read */
    SL_FI();
    memcpy(out, slot, GEOM(elem_size));
    return SL_OK;
#endif
    memcpy(out, slot, GEOM(elem_size));
    SL_FI();
    /* Never full: the free ring has a cell for every slot. The CAS orders
     * our read of the slot before a producer that takes the index writes it. */
    ring_push(FREE(), w, shared);
    return SL_OK;
}

SL_API sl_status sl_mpmc_try_push(sl_mpmc *q, const void *elem)
{
    if (!q || !elem)
        return SL_EINVAL;
    return push_one(q, NULL, elem, false);
}

SL_API sl_status sl_mpmc_try_pop(sl_mpmc *q, void *out)
{
    if (!q || !out)
        return SL_EINVAL;
    return pop_one(q, NULL, out, false);
}

sl_status sl__mpmc_push_in(const sl__mpmc_view *v, const void *elem)
{
    return push_one(NULL, v, elem, true);
}

sl_status sl__mpmc_pop_in(const sl__mpmc_view *v, void *out)
{
    return pop_one(NULL, v, out, true);
}

void sl__mpmc_drain(sl_mpmc *q, sl_visit_fn fn, void *ctx)
{
    uint64_t v;
#ifdef SL_MUTANT_MPMC_DRAIN_SKIPS_LEFTOVER
    if (sl__mpmc_take_used(q, &v) && !sl__mpmc_direct(q))
        sl__mpmc_release(q, v); /* planted bug: the oldest leftover is never handed on */
#endif
    while (sl__mpmc_take_used(q, &v)) {
        if (sl__mpmc_direct(q)) {
            if (fn)
                fn(&v, ctx);
            continue;
        }
        if (fn)
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
#ifdef SL_MUTANT_MPMC_POP_N_ONE_FEWER
    done -= done > 0; /* planted bug: the last message taken goes unreported */
#endif
    return done;
}

SL_API size_t sl_mpmc_len(const sl_mpmc *q)
{
    if (!q)
        return 0;
    sl__cellring r = used_ring(q);
    return (size_t)sl__cellring_len(&r);
}

SL_API size_t sl_mpmc_cap(const sl_mpmc *q) { return q ? q->capacity : 0; }
