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
 * Here too: every form's storage and init, and the public operations.
 *
 * The swap form (messages of 9 to SL__MPMC_SWAP_MAX bytes, and a shared
 * channel's messages over 8 bytes at every size), with the settling of what
 * a dead holder leaves, is channels/mpmc_swap.c: reached from the public
 * operations here through its out-of-line paths alone (rings.h).
 */
#include "sluice/mpmc.h"

#include <stdlib.h>
#include <string.h>

#include "cellring.h"
#include "rings.h"
#include "sluice/park.h"
#include "internal/sysops.h"
#include "internal/util.h"

/* Declared in internal/util.h and cellring.h ("The next line, fetched
 * ahead"); the flag is set here, when the library loads. */
bool sl__prefetchw_known;
_Thread_local unsigned sl__cellring_quiet __attribute__((tls_model("initial-exec")));
_Thread_local unsigned sl__cellring_pushes __attribute__((tls_model("initial-exec")));
_Thread_local unsigned char sl__cellring_handoff __attribute__((tls_model("initial-exec")));

static __attribute__((constructor)) void detect_prefetchw(void)
{
    sl__prefetchw_known = sl__cpu_has_prefetchw();
}

/* ---- the queue's rings (the used ring: rings.h) ---------------------------- */

static sl__cellring free_ring(const sl_mpmc *q)
{
    sl_mpmc *m = (sl_mpmc *)(uintptr_t)q;
    return (sl__cellring){m->free, &m->free_head, &m->free_tail, m->free_one_lap, m->slot_count};
}


static sl_status alloc_storage(sl_mpmc *q, size_t stride, size_t capacity, size_t slots,
                               bool free_ring, size_t spares)
{
    q->used = sl__alloc(SL_CACHELINE, capacity * sizeof(sl_mpmc_cell));
    if (slots)
        q->slots = sl__alloc(SL_CACHELINE, sl__round_to_line(slots * stride));
    if (free_ring)
        q->free = sl__alloc(SL_CACHELINE, slots * sizeof(sl_mpmc_cell));
    if (spares)
        q->spares = sl__alloc(SL_CACHELINE, sl__round_to_line(spares * sizeof(uint64_t)));
    if (!q->used || (slots && !q->slots) || (free_ring && !q->free) || (spares && !q->spares)) {
        free(q->used);
        free(q->free);
        free(q->slots);
        free((void *)q->spares);
        return SL_ENOMEM;
    }
    return SL_OK;
}

/* The swap form's start: cell i holds slot i (free for position base + i),
 * spare entry j holds slot capacity + j. */
void sl__mpmc_swap_fill(sl_mpmc_cell *cells, size_t capacity, SL_ATOMIC(uint64_t) *spares,
                        size_t spare_count)
{
    for (size_t i = 0; i < capacity; i++)
        atomic_init(&cells[i].value, i);
    for (size_t j = 0; j < spare_count; j++)
        atomic_init(&spares[j], capacity + j);
}

static void init_swap(sl_mpmc *q, size_t spares)
{
    sl__mpmc_swap_fill(q->used, q->capacity, q->spares, spares);
    q->spare_count = spares;
    q->spare_mask = sl__cellring_lap(spares) - 1;
}

/* One init for every form: `ring_spare` > 0 is the overwrite ring's indexed
 * form (free ring, capacity + ring_spare slots); otherwise messages of 9 to
 * SL__MPMC_SWAP_MAX bytes take the swap form with `swap_spares` spares and
 * larger ones the indexed form. */
static sl_status init_any(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start,
                          size_t ring_spare, size_t swap_spares)
{
    if (!q || elem_size == 0 || elem_size > SL_ELEM_MAX || capacity == 0)
        return SL_EINVAL;
    /* Slot indices and positions must fit easily in 64 bits. */
    if (capacity > ((size_t)1 << 40) || ring_spare > ((size_t)1 << 40))
        return SL_EINVAL;
    memset(q, 0, sizeof *q);
#ifdef SL_MUTANT_MPMC_CAP_PLUS_ONE
    capacity += 1; /* planted bug: one cell more than asked */
#endif
    bool swap = ring_spare == 0 && elem_size > sizeof(uint64_t) && elem_size <= SL__MPMC_SWAP_MAX;
    size_t spares = swap ? (swap_spares && swap_spares < capacity ? swap_spares : capacity) : 0;
    size_t slots = elem_size <= sizeof(uint64_t) ? 0 : capacity + (swap ? spares : ring_spare);
    size_t stride = swap ? sl__mpmc_swap_stride(elem_size) : elem_size;
    if (slots > SIZE_MAX / stride - SL_CACHELINE)
        return SL_EINVAL; /* the storage's size overflows */
    sl_status st = alloc_storage(q, stride, capacity, slots, slots && !swap, spares);
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
    if (swap)
        init_swap(q, spares);
    else if (slots) {
        /* The free ring starts full: a whole lap written, its tail one lap on. */
        q->free_one_lap = sl__cellring_lap(slots);
        uint64_t free_base = start & ~(q->free_one_lap - 1);
        sl__cellring_init(q->free, slots, free_base, true);
        atomic_init(&q->free_head, free_base);
        atomic_init(&q->free_tail, free_base + q->free_one_lap);
    }
    return SL_OK;
}

sl_status sl__mpmc_init_mode(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start,
                             size_t spare)
{
    return init_any(q, elem_size, capacity, start, spare, 0);
}

sl_status sl__mpmc_init_spares(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start,
                               size_t spares)
{
    return init_any(q, elem_size, capacity, start, 0, spares);
}

sl_status sl__mpmc_init_at(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start)
{
    return init_any(q, elem_size, capacity, start, 0, 0);
}

SL_API sl_status sl_mpmc_init(sl_mpmc *q, size_t elem_size, size_t capacity)
{
    return init_any(q, elem_size, capacity, 0, 0, 0);
}

SL_API void sl_mpmc_destroy(sl_mpmc *q)
{
    if (!q)
        return;
    free(q->used);
    free(q->free);
    free(q->slots);
    free((void *)q->spares);
    q->used = q->free = NULL;
    q->slots = NULL;
    q->spares = NULL;
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
     * change a parked receiver pairs with. The next line is fetched ahead
     * in the direct form only: the overwrite ring's indexed used ring runs
     * full, and the hint there took the consumers' line (cellring.h); for
     * the same reason a displacing push in the direct form quiets it. */
    sl__cellring r = sl__mpmc_used_ring(q);
    return sl__cellring_push_as(&r, value, displace, evicted, false, NULL, 0, q->slots == NULL,
                                NULL);
}

bool sl__mpmc_take_used(sl_mpmc *q, uint64_t *index)
{
    sl__cellring r = sl__mpmc_used_ring(q);
    return sl__cellring_pop(&r, index);
}

void sl__mpmc_release(sl_mpmc *q, uint64_t index)
{
    /* Never full: the free ring has a cell for every slot. The CAS orders
     * our read of the slot before a producer that takes the index writes it. */
    sl__cellring r = free_ring(q);
    sl__cellring_push_free(&r, index);
}

unsigned char *sl__mpmc_slot(sl_mpmc *q, uint64_t index)
{
    return q->slots + (size_t)index * q->elem_size;
}

/* ---- the direct and indexed forms, raw and shared ------------------------ */

/* The push and the pop, written once for the raw queue (`shared` false:
 * its rings and geometry from q) and the shared channel (true: from the
 * view v, with the guarded rings, and every slot index read from a ring
 * checked against slot_count, since the segment may have been corrupted by
 * a peer). `shared` is a constant at every call: the raw queue builds each
 * ring from q's fields where it is used, after any copy, as it did before
 * there was a view (building them first kept them live across the copy:
 * 4 to 23 instructions more per pair). `direct`, also a constant: the caller
 * has tested the form already (the raw queue's public calls), so the slots
 * are not loaded and tested a second time after the ring step. */
#define GEOM(field) (shared ? v->field : q->field)
#define USED() (shared ? v->used : sl__mpmc_used_ring(q))
#define FREE() free_ring(q) /* a shared channel has no indexed form */

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
push_one(const sl_mpmc *q, const sl__mpmc_view *v, const void *elem, bool shared, bool direct)
{
    if (shared || direct || !GEOM(slots)) {
        uint64_t w = 0;
        sl__copy_word(&w, elem, GEOM(elem_size));
        return ring_push(USED(), w, shared) == 0 ? SL_OK : SL_FULL;
    }
    uint64_t index;
    if (!ring_pop(FREE(), &index, shared))
        return SL_FULL;
    unsigned char *slot = GEOM(slots) + (size_t)index * GEOM(elem_size);
#ifdef SL_MUTANT_MPMC_PUBLISH_BEFORE_COPY
    ring_push(USED(), index, shared); /* planted bug: published, then written */
    SL_FI();
    sl__copy_msg(slot, elem, GEOM(elem_size));
    return SL_OK;
#endif
    sl__copy_msg(slot, elem, GEOM(elem_size));
    SL_FI(); /* holding a slot: others must not wait for us */
    /* Never full: the used ring has a cell for every slot. The cell's CAS
     * publishes the bytes (release) and is the condition change a parked
     * receiver pairs with. */
    ring_push(USED(), index, shared);
    return SL_OK;
}

static inline __attribute__((always_inline)) sl_status
pop_one(const sl_mpmc *q, const sl__mpmc_view *v, void *out, bool shared, bool direct)
{
    uint64_t w;
    if (!ring_pop(USED(), &w, shared))
        return SL_EMPTY;
    if (shared || direct || !GEOM(slots)) {
        sl__copy_word(out, &w, GEOM(elem_size));
        return SL_OK;
    }
    unsigned char *slot = GEOM(slots) + (size_t)w * GEOM(elem_size);
#ifdef SL_MUTANT_MPMC_RELEASE_BEFORE_COPY
    ring_push(FREE(), w, shared); /* planted bug: the slot is free before it is read */
    SL_FI();
    sl__copy_msg(out, slot, GEOM(elem_size));
    return SL_OK;
#endif
    sl__copy_msg(out, slot, GEOM(elem_size));
    SL_FI();
    /* Never full: the free ring has a cell for every slot. The CAS orders
     * our read of the slot before a producer that takes the index writes it. */
    sl__cellring r = FREE();
    sl__cellring_push_free(&r, w);
    return SL_OK;
}

/* ---- the public operations ------------------------------------------------ */

/* Messages over 8 bytes: the swap form, or the indexed one (SL_RING's, and
 * over 256 bytes). Each out of line on its own, so that each path keeps the
 * registers and frame it has alone: the three inlined in one function cost
 * the direct form 10 instructions a pair, and two in one the swap form 26
 * (callgrind). */
__attribute__((noinline)) sl_status sl__mpmc_push_indexed(sl_mpmc *q, const void *elem)
{
    return push_one(q, NULL, elem, false, false);
}

__attribute__((noinline)) sl_status sl__mpmc_pop_indexed(sl_mpmc *q, void *out)
{
    return pop_one(q, NULL, out, false, false);
}

/* The push for either caller; `wake` as in push_swap. */
static inline __attribute__((always_inline)) sl_status push_any(sl_mpmc *q, const void *elem,
                                                                sl_event *wake)
{
    if (!q || !elem)
        return SL_EINVAL;
    if (__builtin_expect(q->slots != NULL, 0))
        return sl__mpmc_push_slots(q, elem, wake);
    return push_one(q, NULL, elem, false, true);
}

SL_API sl_status sl_mpmc_try_push(sl_mpmc *q, const void *elem)
{
    return push_any(q, elem, NULL);
}

sl_status sl__mpmc_send(sl_mpmc *q, const void *elem, sl_event *not_full)
{
    return push_any(q, elem, not_full);
}

SL_API sl_status sl_mpmc_try_pop(sl_mpmc *q, void *out)
{
    if (!q || !out)
        return SL_EINVAL;
    if (__builtin_expect(q->slots != NULL, 0))
        return sl__mpmc_pop_slots(q, out);
    return pop_one(q, NULL, out, false, true);
}

sl_status sl__mpmc_push_in(const sl__mpmc_view *v, const void *elem)
{
    if (__builtin_expect(v->slots != NULL, 0))
        return sl__mpmc_push_slots_in(v, elem);
    return push_one(NULL, v, elem, true, true);
}

sl_status sl__mpmc_pop_in(const sl__mpmc_view *v, void *out)
{
    if (__builtin_expect(v->slots != NULL, 0))
        return sl__mpmc_pop_slots_in(v, out);
    return pop_one(NULL, v, out, true, true);
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
        if (q->spares) { /* swap form: the slot stays in its cell */
            if (fn)
                fn(sl__mpmc_swap_slot(q->slots, q->elem_size, v), ctx);
            continue;
        }
        if (fn)
            fn(sl__mpmc_slot(q, v), ctx);
        sl__mpmc_release(q, v);
    }
}

size_t sl__mpmc_send_n(sl_mpmc *q, const void *elems, size_t n, sl_event *not_full)
{
    const unsigned char *p = elems;
    size_t done = 0;
    if (!q || !elems)
        return 0;
    while (done < n && sl__mpmc_send(q, p + done * q->elem_size, not_full) == SL_OK)
        done++;
    return done;
}

SL_API size_t sl_mpmc_push_n(sl_mpmc *q, const void *elems, size_t n)
{
    return sl__mpmc_send_n(q, elems, n, NULL);
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
    sl__cellring r = sl__mpmc_used_ring(q);
    return (size_t)sl__cellring_len(&r);
}

SL_API size_t sl_mpmc_cap(const sl_mpmc *q) { return q ? q->capacity : 0; }
