/*
 * channels/list.c — the unbounded MPMC list: FAAArrayQueue segments with
 * inline message bytes, reclaimed through RCU.
 *
 * A segment is one allocation: a header, `seg_slots` one-byte slot states, and
 * the slots' message bytes. Positions in a segment are claimed with
 * fetch-and-add on `enq` (producers) and `deq` (consumers); both may run past
 * the end, which means "this segment is used up".
 *
 * Why lock-free: every iteration of a push either publishes its message, or
 * finds its slot poisoned by a consumer (which made progress), or finds the
 * segment used up and links or follows the next one (a CAS that some thread
 * wins). A pop either takes a message, poisons an empty slot, finds the list
 * empty, or moves the head to the next segment. No step waits for a
 * particular other thread (the bounded spin before poisoning only saves the
 * late producer a retry).
 *
 * Reclamation: a pop that moves the head past a used-up segment first makes
 * sure the tail has moved past it too, so no root pointer reaches it; threads
 * already inside it are in an RCU read-side section (every operation runs in
 * one), and the segment is freed by call_rcu after a grace period.
 * ThreadSanitizer cannot see urcu's synchronisation (membarrier-based and
 * uninstrumented), so TSan builds keep unlinked segments chained from
 * `oldest` until destroy instead; ASan builds exercise the real reclamation.
 */
#include "sluice/list.h"

#include <stdlib.h>
#include <string.h>
#include <urcu-bp.h>

#include "rings.h"
#include "internal/spin.h"

enum { SLOT_EMPTY = 0, SLOT_FULL = 1, SLOT_TAKEN = 2 };

/* A consumer that finds its slot empty while a producer has already claimed
 * it waits this many pause hints before poisoning it. */
#define LIST_EMPTY_SPIN 64

#if defined(__SANITIZE_THREAD__)
#define LIST_FREE_AT_DESTROY 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LIST_FREE_AT_DESTROY 1
#endif
#endif
#ifndef LIST_FREE_AT_DESTROY
#define LIST_FREE_AT_DESTROY 0
#endif

struct sl_list_seg {
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) enq; /* producers' next slot */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) deq; /* consumers' next slot */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(sl_list_seg *) next;
    uint64_t base;        /* list position of slot 0, for len */
    sl_list *owner;
    struct rcu_head rcu;
    unsigned char *bytes; /* seg_slots * elem_size */
    SL_ATOMIC(unsigned char) state[]; /* seg_slots entries */
};

static size_t slots_for(size_t elem_size)
{
    /* About 32 KiB of messages per segment, between 32 and 1024 slots. */
    size_t n = (32 * 1024) / elem_size;
    return n < 32 ? 32 : n > 1024 ? 1024 : n;
}

static sl_list_seg *seg_new(sl_list *q, uint64_t base)
{
    size_t hdr = sl__round_to_line(sizeof(sl_list_seg) + q->seg_slots);
    sl_list_seg *s =
        aligned_alloc(SL_CACHELINE, hdr + sl__round_to_line(q->seg_slots * q->elem_size));
    if (!s)
        return NULL;
    atomic_init(&s->enq, 0);
    atomic_init(&s->deq, 0);
    atomic_init(&s->next, NULL);
    s->base = base;
    s->owner = q;
    s->bytes = (unsigned char *)s + hdr;
    for (size_t i = 0; i < q->seg_slots; i++)
        atomic_init(&s->state[i], (unsigned char)SLOT_EMPTY);
    atomic_fetch_add_explicit(&q->segs_live, 1, memory_order_relaxed);
    return s;
}

static void seg_free(sl_list_seg *s)
{
    atomic_fetch_sub_explicit(&s->owner->segs_live, 1, memory_order_relaxed);
    free(s);
}

static void seg_free_rcu(struct rcu_head *head)
{
    sl_list_seg *s = caa_container_of(head, sl_list_seg, rcu);
    sl_list *q = s->owner;
    seg_free(s);
    /* Release: destroy's acquire load of the count sees this free done. */
    atomic_fetch_sub_explicit(&q->segs_retiring, 1, memory_order_release);
}

/* s is unreachable from head and tail: free it after a grace period. */
static void seg_retire(sl_list *q, sl_list_seg *s)
{
    if (LIST_FREE_AT_DESTROY)
        return; /* stays chained from q->oldest */
    atomic_fetch_add_explicit(&q->segs_retiring, 1, memory_order_relaxed);
    urcu_bp_call_rcu(&s->rcu, seg_free_rcu);
}

SL_API sl_status sl_list_init(sl_list *q, size_t elem_size)
{
    if (!q || elem_size == 0 || elem_size > SL_ELEM_MAX)
        return SL_EINVAL;
    memset(q, 0, sizeof *q);
    q->elem_size = elem_size;
    q->seg_slots = slots_for(elem_size);
    atomic_init(&q->segs_live, 0);
    atomic_init(&q->segs_retiring, 0);
    sl_list_seg *first = seg_new(q, 0);
    if (!first)
        return SL_ENOMEM;
    q->oldest = first;
    atomic_init(&q->head, first);
    atomic_init(&q->tail, first);
    return SL_OK;
}

static inline unsigned char *slot_bytes(const sl_list *q, sl_list_seg *s, uint64_t i)
{
    return s->bytes + (size_t)i * q->elem_size;
}

/* The tail segment is used up: link a new one carrying our message in slot 0,
 * or follow the one another producer linked. SL_OK: sent; SL_EMPTY: retry. */
static sl_status push_grow(sl_list *q, sl_list_seg *seg, const void *elem)
{
    sl_list_seg *next = atomic_load_explicit(&seg->next, memory_order_acquire);
    if (!next) {
        sl_list_seg *fresh = seg_new(q, seg->base + q->seg_slots);
        if (!fresh)
            return SL_ENOMEM;
        memcpy(slot_bytes(q, fresh, 0), elem, q->elem_size);
        atomic_init(&fresh->state[0], (unsigned char)SLOT_FULL);
        atomic_init(&fresh->enq, 1);
        SL_FI();
        /* seq_cst: publishes the segment and its first message (release), and
         * is the condition change a parked receiver pairs with. */
        if (atomic_compare_exchange_strong_explicit(&seg->next, &next, fresh,
                                                    memory_order_seq_cst,
                                                    memory_order_acquire)) {
            atomic_compare_exchange_strong_explicit(&q->tail, &seg, fresh,
                                                    memory_order_release,
                                                    memory_order_relaxed);
            return SL_OK;
        }
        seg_free(fresh); /* never published */
    }
    /* Help the tail along; losing the race means someone else did. */
    atomic_compare_exchange_strong_explicit(&q->tail, &seg, next, memory_order_release,
                                            memory_order_relaxed);
    return SL_EMPTY;
}

static sl_status push_locked(sl_list *q, const void *elem)
{
    for (;;) {
        /* Acquire: the segment's initialisation is visible. */
        sl_list_seg *seg = atomic_load_explicit(&q->tail, memory_order_acquire);
        /* seq_cst: a parked receiver's emptiness re-check compares deq with
         * enq; the claim must be in the same total order as its fence. */
        SL_FI();
        uint64_t i = atomic_fetch_add_explicit(&seg->enq, 1, memory_order_seq_cst);
        if (i >= q->seg_slots) {
            sl_status st = push_grow(q, seg, elem);
            if (st != SL_EMPTY)
                return st;
            continue;
        }
        memcpy(slot_bytes(q, seg, i), elem, q->elem_size);
        SL_FI(); /* claimed, not published: a receiver may poison the slot now */
        unsigned char expect = SLOT_EMPTY;
        /* seq_cst: releases the bytes to the consumer that takes the slot and
         * is the condition change a parked receiver pairs with. */
        if (atomic_compare_exchange_strong_explicit(&seg->state[i], &expect,
                                                    (unsigned char)SLOT_FULL,
                                                    memory_order_seq_cst,
                                                    memory_order_relaxed))
            return SL_OK;
        /* A consumer poisoned the slot before we published: try a later one. */
    }
}

SL_API sl_status sl_list_try_push(sl_list *q, const void *elem)
{
    if (!q || !elem)
        return SL_EINVAL;
    urcu_bp_read_lock();
    sl_status st = push_locked(q, elem);
    urcu_bp_read_unlock();
    return st;
}

/* The head segment is used up. Returns false if there is no next segment
 * (the list is empty); otherwise moves the head on (retiring the old segment
 * if this thread moved it) and returns true. */
static bool pop_advance(sl_list *q, sl_list_seg *seg)
{
    sl_list_seg *next = atomic_load_explicit(&seg->next, memory_order_acquire);
    if (!next)
        return false;
    /* Take the tail past seg first, so that no root pointer reaches it once
     * the head moves too. */
    sl_list_seg *t = seg;
    SL_FI();
    atomic_compare_exchange_strong_explicit(&q->tail, &t, next, memory_order_release,
                                            memory_order_relaxed);
    if (atomic_compare_exchange_strong_explicit(&q->head, &seg, next, memory_order_acq_rel,
                                                memory_order_relaxed))
        seg_retire(q, seg);
    return true;
}

/* Takes slot i of seg: true with the message in out, or false after
 * poisoning the still-empty slot. */
static bool pop_take(sl_list *q, sl_list_seg *seg, uint64_t i, void *out)
{
    SL_ATOMIC(unsigned char) *state = &seg->state[i];
    if (atomic_load_explicit(state, memory_order_relaxed) == SLOT_EMPTY) {
        for (unsigned k = 0; k < LIST_EMPTY_SPIN; k++) {
            sl_cpu_relax();
            if (atomic_load_explicit(state, memory_order_relaxed) != SLOT_EMPTY)
                break;
        }
    }
    SL_FI();
    /* Acquire: pairs with the producer's publishing CAS. */
    if (atomic_exchange_explicit(state, (unsigned char)SLOT_TAKEN, memory_order_acq_rel) !=
        SLOT_FULL)
        return false;
    memcpy(out, slot_bytes(q, seg, i), q->elem_size);
    return true;
}

static sl_status pop_locked(sl_list *q, void *out)
{
    for (;;) {
        sl_list_seg *seg = atomic_load_explicit(&q->head, memory_order_acquire);
        uint64_t d = atomic_load_explicit(&seg->deq, memory_order_seq_cst);
        uint64_t e = atomic_load_explicit(&seg->enq, memory_order_seq_cst);
        if (d >= e && atomic_load_explicit(&seg->next, memory_order_seq_cst) == NULL)
            return SL_EMPTY;
        SL_FI();
        uint64_t i = atomic_fetch_add_explicit(&seg->deq, 1, memory_order_seq_cst);
        if (i >= q->seg_slots) {
            if (!pop_advance(q, seg))
                return SL_EMPTY;
            continue;
        }
        if (pop_take(q, seg, i, out))
            return SL_OK;
    }
}

SL_API sl_status sl_list_try_pop(sl_list *q, void *out)
{
    if (!q || !out)
        return SL_EINVAL;
    urcu_bp_read_lock();
    sl_status st = pop_locked(q, out);
    urcu_bp_read_unlock();
    return st;
}

SL_API size_t sl_list_push_n(sl_list *q, const void *elems, size_t n)
{
    const unsigned char *p = elems;
    size_t done = 0;
    if (!q || !elems)
        return 0;
    urcu_bp_read_lock();
    while (done < n && push_locked(q, p + done * q->elem_size) == SL_OK)
        done++;
    urcu_bp_read_unlock();
    return done;
}

SL_API size_t sl_list_pop_n(sl_list *q, void *out, size_t n)
{
    unsigned char *p = out;
    size_t done = 0;
    if (!q || !out)
        return 0;
    urcu_bp_read_lock();
    while (done < n && pop_locked(q, p + done * q->elem_size) == SL_OK)
        done++;
    urcu_bp_read_unlock();
    return done;
}

static uint64_t position(const sl_list *q, sl_list_seg *s, SL_ATOMIC(uint64_t) *index)
{
    uint64_t i = atomic_load_explicit(index, memory_order_acquire);
    return s->base + (i < q->seg_slots ? i : q->seg_slots);
}

SL_API size_t sl_list_len(const sl_list *q)
{
    if (!q)
        return 0;
    urcu_bp_read_lock();
    sl_list_seg *h = atomic_load_explicit(&q->head, memory_order_acquire);
    uint64_t popped = position(q, h, &h->deq);
    sl_list_seg *t = atomic_load_explicit(&q->tail, memory_order_acquire);
    uint64_t pushed = position(q, t, &t->enq);
    urcu_bp_read_unlock();
    return pushed > popped ? (size_t)(pushed - popped) : 0;
}

SL_API size_t sl_list_segments(const sl_list *q)
{
    return q ? (size_t)atomic_load_explicit(&q->segs_live, memory_order_acquire) : 0;
}

void sl__list_drain(sl_list *q, sl_visit_fn fn, void *ctx)
{
    sl_list_seg *seg = atomic_load_explicit(&q->head, memory_order_acquire);
    for (; seg; seg = atomic_load_explicit(&seg->next, memory_order_acquire)) {
        uint64_t end = atomic_load_explicit(&seg->enq, memory_order_acquire);
        uint64_t i = atomic_load_explicit(&seg->deq, memory_order_acquire);
        for (end = end < q->seg_slots ? end : q->seg_slots; i < end; i++) {
            if (atomic_load_explicit(&seg->state[i], memory_order_acquire) != SLOT_FULL)
                continue;
            if (fn)
                fn(slot_bytes(q, seg, i), ctx);
            atomic_store_explicit(&seg->state[i], (unsigned char)SLOT_TAKEN,
                                  memory_order_relaxed);
        }
        atomic_store_explicit(&seg->deq, end, memory_order_relaxed);
    }
}

SL_API void sl_list_destroy(sl_list *q)
{
    if (!q || !atomic_load_explicit(&q->head, memory_order_relaxed))
        return;
    /* Segments waiting for a grace period still point at q: let them go. */
    while (atomic_load_explicit(&q->segs_retiring, memory_order_acquire) != 0)
        urcu_bp_barrier();
    sl_list_seg *seg = LIST_FREE_AT_DESTROY ? q->oldest
                                            : atomic_load_explicit(&q->head, memory_order_relaxed);
    while (seg) {
        sl_list_seg *next = atomic_load_explicit(&seg->next, memory_order_relaxed);
        seg_free(seg);
        seg = next;
    }
    atomic_store_explicit(&q->head, NULL, memory_order_relaxed);
    atomic_store_explicit(&q->tail, NULL, memory_order_relaxed);
}
