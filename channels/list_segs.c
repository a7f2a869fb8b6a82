/*
 * channels/list_segs.c — SL_LIST's segments from allocation to free: a new
 * segment, the reset that empties one, the list's one spare, and their
 * reclamation through the library's epoch domain (internal/epoch.h); the
 * push and pop that use them are channels/list.c's, the layout
 * channels/list_impl.h's.
 *
 * Reclamation: a pop that moves the head past a used-up segment first makes
 * sure the tail has moved past it too, so no root pointer reaches it; then it
 * stamps the segment with the epoch domain and frees, oldest first, every
 * stamped segment that no thread inside an operation can still hold. The
 * first freed segment becomes the list's spare, which the next growth takes
 * instead of calling the allocator; the rest go back to the allocator.
 */
#include "sluice/list.h"

#include <stdlib.h>
#include <string.h>

#include "rings.h"
#include "list_impl.h"
#include "internal/epoch.h"
#include "internal/util.h"
#include "internal/testing.h"
#include "internal/sysops.h"

static size_t seg_groups(const sl_list *q)
{
    return (q->seg_slots + q->group_slots - 1) / q->group_slots;
}

/* Empties s for use as a segment of q. No other thread may reach s. */
static void seg_reset(const sl_list *q, sl_list_seg *s)
{
    /* Relaxed atomic stores, not atomic_init (a non-atomic write): reclaim's
     * release fence orders its move of `oldest` before these, by C11's
     * rules, only if they are atomic. Each is still one plain store. */
    atomic_store_explicit(&s->enq, 0, memory_order_relaxed);
    atomic_store_explicit(&s->deq, 0, memory_order_relaxed);
    atomic_store_explicit(&s->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&s->retired, 0, memory_order_relaxed);
    /* Plain bytes: nobody else can see s (never published, or past its grace
     * period), and nobody who reaches s through `oldest` reads its states;
     * they reach the next producer through the spare's release CAS. */
    for (size_t g = 0, n = seg_groups(q); g < n; g++)
        memset(s->groups + g * q->group_bytes, SLOT_EMPTY, GROUP_STATES);
}

sl_list_seg *sl__list_seg_alloc(sl_list *q)
{
    size_t hdr = sl__round_to_line(sizeof(sl_list_seg));
    sl_list_seg *s =
        sl__alloc(SL_CACHELINE, hdr + sl__round_to_line(seg_groups(q) * q->group_bytes));
    if (!s)
        return NULL;
    s->groups = (unsigned char *)s + hdr;
    seg_reset(q, s);
    atomic_fetch_add_explicit(&q->segs_live, 1, memory_order_relaxed);
    return s;
}

static void seg_free(sl_list *q, sl_list_seg *s)
{
    atomic_fetch_sub_explicit(&q->segs_live, 1, memory_order_relaxed);
    free(s);
}

/* s is unreachable and no thread holds it: keep it as the spare, or free it
 * if there already is one. */
void sl__list_seg_put(sl_list *q, sl_list_seg *s)
{
    sl_list_seg *none = NULL;
    seg_reset(q, s);
    /* Release: the reset is done before a producer takes the spare. */
    if (!atomic_compare_exchange_strong_explicit(&q->spare, &none, s, memory_order_release,
                                                 memory_order_relaxed))
        seg_free(q, s);
}

sl_list_seg *sl__list_take_spare(sl_list *q)
{
    /* Acquire: pairs with sl__list_seg_put's release, so the reset is visible. */
    return atomic_exchange_explicit(&q->spare, NULL, memory_order_acquire);
}

/* The reclaim flag: 0, or raised by a thread of fork generation g
 * (sl__epoch_forks) as 2g + 1. Only a thread of this process's own
 * generation is there to lower it: in a fork's child, a flag raised before
 * the fork was raised by a thread that did not come along, and is taken
 * over rather than respected, or the child would never free a segment of
 * that list again. Acquire: the previous reclaimer's moves of `oldest` are
 * visible. */
static bool reclaim_begin(sl_list *q)
{
    unsigned mine = 2u * atomic_load_explicit(&sl__epoch_forks, memory_order_relaxed) + 1u;
    unsigned seen = atomic_load_explicit(&q->reclaiming, memory_order_relaxed);
#ifdef SL_MUTANT_LIST_FORK_FLAG_KEPT
    mine = 1u; /* planted bug: a flag raised before a fork holds off the child's reclaims */
    seen = 0u;
#endif
    if (seen == mine)
        return false; /* another thread of this process frees now: tried, never waited for */
    return atomic_compare_exchange_strong_explicit(&q->reclaiming, &seen, mine,
                                                   memory_order_acquire, memory_order_relaxed);
}

/* Stamps s, which the walk found unstamped, if it is unlinked: its
 * unlinker has yet to stamp it (list.c, pop_advance), or was a thread a
 * fork left behind and never will. The head's seq_cst load that shows it
 * moved past s comes before the stamp, as the unlinker's CAS does;
 * whichever stamp comes first counts. false: s is the head, the walk's
 * end. */
static bool stamp_unlinked(sl_list *q, sl_list_seg *s)
{
    if (atomic_load_explicit(&q->head, memory_order_seq_cst) == s)
        return false;
    uint64_t unstamped = 0;
    /* Release: as the unlinker's stamp. */
    atomic_compare_exchange_strong_explicit(&s->retired, &unstamped, sl__epoch_stamp(),
                                            memory_order_release, memory_order_relaxed);
    return true;
}

/* Frees, oldest first, the unlinked segments that no thread inside an
 * operation can still hold. One thread at a time; the others skip it (it is
 * tried, never waited for). The calling thread's own announcement is left out
 * of the scan when `self` is given: the caller then dereferences no segment
 * it loaded before the call (NULL: it may, and its announcement counts). */
void sl__list_reclaim(sl_list *q, const sl_epoch_rec *self)
{
    if (!reclaim_begin(q))
        return;
    sl_list_seg *first = atomic_load_explicit(&q->oldest, memory_order_relaxed), *end = first;
#ifndef SL_MUTANT_LIST_EARLY_FREE
    /* The hint below, before the walk: a thread seen inside since before the
     * oldest segment's stamp holds it, and the frees go oldest first, so
     * nothing can be freed; the walk would cost a miss per retained segment
     * on every empty pop while that thread is inside (review). */
    uint64_t first_stamp = atomic_load_explicit(&first->retired, memory_order_acquire);
    if (first_stamp != 0 && sl__epoch_oldest_seen(self) < first_stamp) {
        atomic_store_explicit(&q->reclaiming, 0u, memory_order_release);
        return;
    }
#endif
    /* Stamps before the scan: a segment stamped after the scan may be held by
     * a thread that entered after it. Acquire: the stamp's epoch bump (after
     * the unlink) is ordered before the scan's loads. */
    while (atomic_load_explicit(&end->retired, memory_order_acquire) != 0 ||
           stamp_unlinked(q, end))
        end = atomic_load_explicit(&end->next, memory_order_relaxed);
#ifdef SL_MUTANT_LIST_EARLY_FREE
    uint64_t safe = UINT64_MAX; /* planted bug: ignores threads still inside */
#else
    uint64_t safe = 0;
    /* A thread seen inside since before the oldest stamp holds every stamped
     * segment (nothing would be freed): skip the scan's barrier, a
     * membarrier, as a pop finding the list empty behind a preempted
     * operation would otherwise issue one each time. */
    if (first != end && sl__epoch_oldest_seen(self) >=
                            atomic_load_explicit(&first->retired, memory_order_relaxed))
        safe = sl__epoch_oldest(self);
#endif
    sl_list_seg *s = first;
    while (s != end && atomic_load_explicit(&s->retired, memory_order_relaxed) <= safe) {
        sl_list_seg *next = atomic_load_explicit(&s->next, memory_order_relaxed);
        /* `oldest` passes s before s is put: a fork between the two leaves
         * the child one segment short, never one it would free twice. */
        atomic_store_explicit(&q->oldest, next, memory_order_relaxed);
        /* Store-store: `oldest` moves before sl__list_seg_put's reset of
         * s's header lands (its `next` and `retired`, which a walk from
         * `oldest` reads, for a fork's snapshot too): a release fence, then
         * those relaxed atomic stores (seg_reset), so whoever reads a reset
         * field with acquire sees `oldest` past s. A relaxed store alone
         * orders nothing on aarch64 (nor against the compiler). A compiler
         * barrier on x86. */
        atomic_thread_fence(memory_order_release);
        sl__list_seg_put(q, s);
        s = next;
    }
    /* Release: the next reclaimer starts from this `oldest`. */
    atomic_store_explicit(&q->reclaiming, 0u, memory_order_release);
}

/* An empty segment for growth: the spare; else what reclamation can free
 * now (the pop that unlinked it may have found a thread still inside); else
 * a new allocation. The caller still uses its tail segment, which may have
 * been unlinked meanwhile, so its own announcement counts in the scan. */
sl_list_seg *sl__list_seg_get(sl_list *q)
{
    sl_list_seg *s = sl__list_take_spare(q);
    if (!s) {
        sl__list_reclaim(q, NULL);
        s = sl__list_take_spare(q);
    }
    return s ? s : sl__list_seg_alloc(q);
}

SL_API size_t sl_list_segments(const sl_list *q)
{
    return q ? (size_t)atomic_load_explicit(&q->segs_live, memory_order_acquire) : 0;
}

SL_API void sl_list_destroy(sl_list *q)
{
    if (!q || !atomic_load_explicit(&q->head, memory_order_relaxed))
        return;
    /* No other thread uses q now: every segment from the oldest not yet
     * freed (unlinked ones included) to the newest, and the spare, go. */
    sl_list_seg *seg = atomic_load_explicit(&q->oldest, memory_order_relaxed);
    while (seg) {
        sl_list_seg *next = atomic_load_explicit(&seg->next, memory_order_relaxed);
        seg_free(q, seg);
        seg = next;
    }
    sl_list_seg *spare = atomic_load_explicit(&q->spare, memory_order_relaxed);
    if (spare)
        seg_free(q, spare);
    atomic_store_explicit(&q->spare, NULL, memory_order_relaxed);
    atomic_store_explicit(&q->oldest, NULL, memory_order_relaxed);
    atomic_store_explicit(&q->head, NULL, memory_order_relaxed);
    atomic_store_explicit(&q->tail, NULL, memory_order_relaxed);
}
