/*
 * channels/ring.c — the overwrite ring: an SL_MPMC queue whose pushes
 * displace the oldest message instead of answering SL_FULL.
 *
 * The displacement is the used ring's own step (channels/cellring.h): a push
 * that finds the cell of its position still holding the previous lap's
 * message — the oldest one, since takes happen in position order — swaps that
 * message out and its own in with one double-width CAS, then moves the head
 * past the displaced position. A pop racing for the same message fails its
 * CAS and moves on, so the message goes to exactly one of them.
 *
 * Messages of at most 8 bytes live in the cells: nothing else is held, and
 * nobody ever waits. Larger ones live in capacity + SL_RING_SPARE slots: a
 * push first takes a free slot, which can only fail while at least
 * SL_RING_SPARE operations hold slots at once (at most `capacity` are in the
 * used ring), and a displaced slot goes back to the free ring once its bytes
 * have been handed over (docs/guarantees.md, "SL_RING").
 */
#include "sluice/ring.h"

#include <sched.h>
#include <string.h>

#include "internal/spin.h"
#include "internal/testing.h"
#include "rings.h"

sl_status sl__ring_init_at(sl_ring *r, size_t elem_size, size_t capacity, uint64_t start)
{
    if (!r || capacity == 0 || capacity > SIZE_MAX / 2)
        return SL_EINVAL;
#ifdef SL_MUTANT_RING_CAP_OFF_BY_ONE
    capacity += 1; /* planted bug: holds one more than asked */
#endif
    size_t spare = SL_RING_SPARE;
#ifdef SL_MUTANT_RING_SPARE_SHORT
    spare -= 1; /* planted bug: one spare slot fewer than sluice/ring.h states */
#endif
    return sl__mpmc_init_mode(&r->q, elem_size, capacity, start, spare);
}

SL_API sl_status sl_ring_init(sl_ring *r, size_t elem_size, size_t capacity)
{
    return sl__ring_init_at(r, elem_size, capacity, 0);
}

SL_API void sl_ring_destroy(sl_ring *r)
{
    if (r)
        sl_mpmc_destroy(&r->q);
}

/* A free slot for a message over 8 bytes. Fails only while SL_RING_SPARE
 * operations hold slots at once: give the processor to one of them. */
static uint64_t take_slot(sl_ring *r)
{
    uint64_t index;
    for (unsigned spins = 0; !sl__mpmc_take_free(&r->q, &index); spins++) {
        if (spins < 64)
            sl_cpu_relax();
        else
            sched_yield();
    }
    return index;
}

sl_status sl__ring_push_visit(sl_ring *r, const void *elem, sl_visit_fn displaced, void *ctx)
{
    sl_mpmc *q = &r->q;
    uint64_t value = 0, evicted;
    if (sl__mpmc_direct(q)) {
        sl__copy_word(&value, elem, q->elem_size);
#ifdef SL_MUTANT_RING_EVICT_NEWEST
        evicted = value; /* planted bug: a full ring turns the new message away */
        if (sl__mpmc_publish(q, value, false, NULL) == 0)
            return SL_OK;
        if (displaced)
            displaced(&evicted, ctx);
        return SL_EVICTED;
#endif
        if (sl__mpmc_publish(q, value, true, &evicted) == 0)
            return SL_OK;
        if (displaced)
            displaced(&evicted, ctx); /* the bytes are the value's first ones */
        return SL_EVICTED;
    }
    value = take_slot(r);
    sl__copy_msg(sl__mpmc_slot(q, value), elem, q->elem_size);
    SL_FI(); /* holding a slot: others must not wait for us */
    if (sl__mpmc_publish(q, value, true, &evicted) == 0)
        return SL_OK;
    if (displaced)
        displaced(sl__mpmc_slot(q, evicted), ctx);
    sl__mpmc_release(q, evicted);
    return SL_EVICTED;
}

static void copy_out(void *elem, void *ctx)
{
    sl_ring *r = ((void **)ctx)[0];
    memcpy(((void **)ctx)[1], elem, r->q.elem_size);
}

SL_API sl_status sl_ring_try_push(sl_ring *r, const void *elem, void *evicted)
{
    if (!r || !elem)
        return SL_EINVAL;
    void *ctx[2] = {r, evicted};
    return sl__ring_push_visit(r, elem, evicted ? copy_out : NULL, ctx);
}

SL_API sl_status sl_ring_try_pop(sl_ring *r, void *out)
{
    if (!r || !out)
        return SL_EINVAL;
    return sl_mpmc_try_pop(&r->q, out);
}

SL_API size_t sl_ring_pop_n(sl_ring *r, void *out, size_t n)
{
    if (!r || !out)
        return 0;
    return sl_mpmc_pop_n(&r->q, out, n);
}

SL_API size_t sl_ring_len(const sl_ring *r) { return r ? sl_mpmc_len(&r->q) : 0; }

SL_API size_t sl_ring_cap(const sl_ring *r) { return r ? r->q.capacity : 0; }

void sl__ring_drain(sl_ring *r, sl_visit_fn fn, void *ctx) { sl__mpmc_drain(&r->q, fn, ctx); }
