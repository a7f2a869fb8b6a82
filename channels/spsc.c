/*
 * channels/spsc.c — the SPSC ring's set-up, batches and out-of-line entry points.
 *
 * The single-message fast paths are static inline in sluice/spsc.h; this file
 * holds what does not pay to inline: init/destroy, the batch forms (one index
 * publication per batch), and the out-of-line copies of the fast paths for C++
 * callers.
 */
#define SL_NO_INLINE 1
#include "sluice/spsc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rings.h"
#include "internal/testing.h"
#include "internal/sysops.h"

static size_t round_up_pow2(size_t x)
{
    size_t p = 1;
    while (p < x)
        p <<= 1;
    return p;
}

/* Storage beyond the capacity, so that a full ring never has the producer
 * refilling the cache line the consumer is reading next. With storage exactly
 * the capacity, the slot a full ring frees and refills sits in the same line
 * as the next messages to read, and every message moves that line both ways:
 * measured 3x slower at 1x1 with 8-byte messages (docs/performance.md). Two
 * lines cover the adjacent-line prefetcher; slots of 128 bytes or more are
 * lines of their own already. */
static size_t slack_slots(size_t elem_size)
{
    return elem_size >= 2 * SL_CACHELINE ? 0 : (2 * SL_CACHELINE + elem_size - 1) / elem_size;
}

size_t sl__spsc_storage(size_t elem_size, size_t capacity)
{
    return round_up_pow2(capacity + slack_slots(elem_size));
}

static void init_side(sl_spsc_side *side, unsigned char *slots, size_t mask, size_t capacity,
                      size_t elem_size, uint64_t start)
{
    atomic_init(&side->index, (size_t)start);
    side->peer_cache = (size_t)start;
    side->geom = (sl__spsc_geom){slots, mask, capacity, elem_size};
    atomic_init(&side->active, 0u);
}

sl_status sl__spsc_init_at(sl_spsc *q, size_t elem_size, size_t capacity, uint64_t start)
{
    if (!q || elem_size == 0 || elem_size > SL_ELEM_MAX || capacity == 0)
        return SL_EINVAL;
    /* The pow2 storage must fit a size_t, and so must storage * elem_size. */
    if (capacity > (SIZE_MAX >> 2) / elem_size)
        return SL_EINVAL;
    size_t slots_n = sl__spsc_storage(elem_size, capacity);
    unsigned char *slots = sl__alloc(SL_CACHELINE, slots_n * elem_size);
    if (!slots)
        return SL_ENOMEM;
    init_side(&q->prod, slots, slots_n - 1, capacity, elem_size, start);
    init_side(&q->cons, slots, slots_n - 1, capacity, elem_size, start);
    return SL_OK;
}

SL_API sl_status sl_spsc_init(sl_spsc *q, size_t elem_size, size_t capacity)
{
    return sl__spsc_init_at(q, elem_size, capacity, 0);
}

SL_API void sl_spsc_destroy(sl_spsc *q)
{
    if (!q)
        return;
    free(q->prod.geom.slots);
    q->prod.geom.slots = q->cons.geom.slots = NULL;
}

/* Copies n messages between the ring, starting at position pos, and a flat
 * array; at most two memcpy calls (before and after the wrap). */
static void copy_run(const sl__spsc_geom *s, size_t pos, unsigned char *flat, size_t n,
                     bool into_ring)
{
    size_t first = (pos & s->mask);
    size_t run = s->mask + 1 - first;
    if (run > n)
        run = n;
    unsigned char *ring = s->slots + first * s->elem_size;
    if (into_ring) {
        memcpy(ring, flat, run * s->elem_size);
#ifndef SL_MUTANT_SPSC_WRAP_NOT_COPIED /* planted bug when defined */
        memcpy(s->slots, flat + run * s->elem_size, (n - run) * s->elem_size);
#endif
    } else {
        memcpy(flat, ring, run * s->elem_size);
        memcpy(flat + run * s->elem_size, s->slots, (n - run) * s->elem_size);
    }
}

SL_API size_t sl__spsc_push_n_in(sl_spsc *q, const sl__spsc_geom *g, const void *elems, size_t n)
{
    sl_spsc_side *p = &q->prod;
    sl__spsc_enter(q, p, g, "producer");
    size_t tail = atomic_load_explicit(&p->index, memory_order_relaxed);
    size_t room = g->capacity - (tail - p->peer_cache);
    if (room < n) {
        /* Acquire: the consumer finished reading the slots it released. */
        p->peer_cache = atomic_load_explicit(&q->cons.index, memory_order_acquire);
        room = g->capacity - (tail - p->peer_cache);
    }
    /* room > capacity: the counters say more than the capacity is free,
     * which only a corrupted counter in shared memory can (sluice/shm.h). */
#ifdef SL_MUTANT_SHM_SPSC_BATCH_UNBOUNDED
    if (n > room) /* planted bug: a batch believes a corrupted counter */
#else
    if (n > room || room > g->capacity)
#endif
        n = room > g->capacity ? 0 : room;
    if (n) {
        copy_run(g, tail, (unsigned char *)(uintptr_t)elems, n, true);
        SL_FI();
        /* Release: all n messages are visible before the new tail. */
        atomic_store_explicit(&p->index, tail + n, memory_order_release);
#ifdef SL_MUTANT_SPSC_PUSH_N_ONE_TOO_MANY
        atomic_store_explicit(&p->index, tail + n + 1, memory_order_release); /* planted */
#endif
    }
    sl__spsc_leave(p, g);
    return n;
}

SL_API size_t sl__spsc_pop_n_in(sl_spsc *q, const sl__spsc_geom *g, void *out, size_t n)
{
    sl_spsc_side *c = &q->cons;
    sl__spsc_enter(q, c, g, "consumer");
    size_t head = atomic_load_explicit(&c->index, memory_order_relaxed);
    size_t avail = c->peer_cache - head;
    if (avail < n) {
        /* Acquire: pairs with the producer's release of the tail. */
        c->peer_cache = atomic_load_explicit(&q->prod.index, memory_order_acquire);
        avail = c->peer_cache - head;
    }
    /* avail > capacity: a corrupted counter (as in push_n). */
    if (n > avail || avail > g->capacity)
        n = avail > g->capacity ? 0 : avail;
    if (n) {
        copy_run(g, head, out, n, false);
        SL_FI();
        /* Release: our reads of the n slots complete before the producer reuses them. */
        atomic_store_explicit(&c->index, head + n, memory_order_release);
    }
    sl__spsc_leave(c, g);
    return n;
}

SL_API size_t sl__spsc_len_in(const sl_spsc *q, size_t capacity)
{
    /* Head first: the tail read after it is at least as new, so the
     * difference is never negative; clamp the other way. */
    size_t head = atomic_load_explicit(&q->cons.index, memory_order_acquire);
    size_t tail = atomic_load_explicit(&q->prod.index, memory_order_acquire);
    size_t len = tail - head;
    return len > capacity ? capacity : len;
}

SL_API size_t sl_spsc_push_n(sl_spsc *q, const void *elems, size_t n)
{
    if (!q || !elems || n == 0)
        return 0;
    return sl__spsc_push_n_in(q, &q->prod.geom, elems, n);
}

SL_API size_t sl_spsc_pop_n(sl_spsc *q, void *out, size_t n)
{
    if (!q || !out || n == 0)
        return 0;
    return sl__spsc_pop_n_in(q, &q->cons.geom, out, n);
}

SL_API size_t sl_spsc_len(const sl_spsc *q) { return q ? sl__spsc_len_in(q, q->prod.geom.capacity) : 0; }

SL_API size_t sl_spsc_cap(const sl_spsc *q) { return q ? q->prod.geom.capacity : 0; }

void sl__spsc_drain(sl_spsc *q, sl_visit_fn fn, void *ctx)
{
    size_t head = atomic_load_explicit(&q->cons.index, memory_order_relaxed);
    size_t tail = atomic_load_explicit(&q->prod.index, memory_order_acquire);
    for (; head != tail; head++)
        fn(q->cons.geom.slots + (head & q->cons.geom.mask) * q->cons.geom.elem_size, ctx);
    atomic_store_explicit(&q->cons.index, head, memory_order_release);
    q->cons.peer_cache = tail;
}

SL_API void sl__spsc_misuse(const sl_spsc *q, const char *side)
{
    fprintf(stderr,
            "sluice: SPSC ring %p: a second %s entered while another was running; "
            "an SL_SPSC ring allows one producer and one consumer thread at a time\n",
            (const void *)q, side);
    abort();
}

SL_API sl_status sl_spsc_try_push(sl_spsc *q, const void *elem)
{
    return sl__spsc_try_push_fast(q, elem);
}

SL_API sl_status sl_spsc_try_pop(sl_spsc *q, void *out)
{
    return sl__spsc_try_pop_fast(q, out);
}
