/*
 * channels/ring.c — the overwrite ring: SCQ slots plus an unclaimed count.
 *
 * `count` is the number of published messages that no taker has claimed.
 * Pushes add to it after publishing; takers (pops, and pushes displacing the
 * oldest) subtract from it *before* taking, with a CAS that never goes below
 * zero. So at every instant count <= messages in the used ring minus the
 * claims not yet taken, and a successful claim guarantees the take finds a
 * message. Each push whose increment took count above the capacity displaces
 * exactly one message, so at rest count (== the used ring's size) is at most
 * the capacity, and a push into a full ring displaces exactly one.
 *
 * Why lock-free: the claim CAS fails only when another operation changed
 * count; the SCQ steps are lock-free; the one wait — a push finding no free
 * slot — needs more than SL_RING_SPARE operations in progress at once,
 * because at rest at most `capacity` slots are used (docs/guarantees.md).
 */
#include "sluice/ring.h"

#include <string.h>

#include "rings.h"
#include "internal/spin.h"

SL_API sl_status sl_ring_init(sl_ring *r, size_t elem_size, size_t capacity)
{
    if (!r || capacity == 0 || capacity > SIZE_MAX / 2)
        return SL_EINVAL;
    sl_status st = sl__mpmc_init_mode(&r->slots, elem_size, capacity + SL_RING_SPARE, 0, true);
    if (st != SL_OK)
        return st;
    atomic_init(&r->count, 0);
    r->capacity = capacity;
    return SL_OK;
}

SL_API void sl_ring_destroy(sl_ring *r)
{
    if (r)
        sl_mpmc_destroy(&r->slots);
}

/* Claims one published message for taking; false when none is unclaimed. */
static bool claim_one(sl_ring *r)
{
    int64_t c = atomic_load_explicit(&r->count, memory_order_seq_cst);
    while (c > 0) {
        SL_FI();
        /* seq_cst: a parked receiver's re-check is this load/CAS. */
        if (atomic_compare_exchange_weak_explicit(&r->count, &c, c - 1, memory_order_seq_cst,
                                                  memory_order_seq_cst))
            return true;
    }
    return false;
}

/* Takes the oldest message after a successful claim. The claim guarantees
 * one is there; the loop only rides out the SCQ's transient states. */
static uint64_t take_claimed(sl_ring *r)
{
    uint64_t index;
    while (!sl__mpmc_take_used(&r->slots, &index))
        sl_cpu_relax();
    return index;
}

sl_status sl__ring_push_visit(sl_ring *r, const void *elem, sl_visit_fn displaced, void *ctx)
{
    uint64_t index;
    /* Waits only while more than SL_RING_SPARE operations are in progress. */
    while (!sl__mpmc_take_free(&r->slots, &index))
        sl_cpu_relax();
    memcpy(sl__mpmc_slot(&r->slots, index), elem, r->slots.elem_size);
    sl__mpmc_publish(&r->slots, index);
    SL_FI(); /* published, not yet counted */
    int64_t now = atomic_fetch_add_explicit(&r->count, 1, memory_order_seq_cst) + 1;
    if (now <= (int64_t)r->capacity || !claim_one(r))
        return SL_OK;
    uint64_t oldest = take_claimed(r);
    if (displaced)
        displaced(sl__mpmc_slot(&r->slots, oldest), ctx);
    sl__mpmc_release(&r->slots, oldest);
    return SL_EVICTED;
}

static void copy_out(void *elem, void *ctx)
{
    sl_ring *r = ((void **)ctx)[0];
    memcpy(((void **)ctx)[1], elem, r->slots.elem_size);
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
    if (!claim_one(r))
        return SL_EMPTY;
    uint64_t index = take_claimed(r);
    memcpy(out, sl__mpmc_slot(&r->slots, index), r->slots.elem_size);
    sl__mpmc_release(&r->slots, index);
    return SL_OK;
}

SL_API size_t sl_ring_pop_n(sl_ring *r, void *out, size_t n)
{
    unsigned char *p = out;
    size_t done = 0;
    if (!r || !out)
        return 0;
    while (done < n && sl_ring_try_pop(r, p + done * r->slots.elem_size) == SL_OK)
        done++;
    return done;
}

SL_API size_t sl_ring_len(const sl_ring *r)
{
    if (!r)
        return 0;
    int64_t c = atomic_load_explicit(&r->count, memory_order_acquire);
    return c <= 0 ? 0 : (uint64_t)c > r->capacity ? r->capacity : (size_t)c;
}

SL_API size_t sl_ring_cap(const sl_ring *r) { return r ? r->capacity : 0; }

void sl__ring_drain(sl_ring *r, sl_visit_fn fn, void *ctx)
{
    while (claim_one(r)) {
        uint64_t index = take_claimed(r);
        if (fn)
            fn(sl__mpmc_slot(&r->slots, index), ctx);
        sl__mpmc_release(&r->slots, index);
    }
}
