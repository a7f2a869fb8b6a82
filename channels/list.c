/*
 * channels/list.c — the unbounded MPMC list: FAAArrayQueue segments with
 * inline message bytes, reclaimed through the library's epoch domain
 * (internal/epoch.h), with one spare segment kept for reuse.
 *
 * A segment is one allocation: a header, then `seg_slots` slots in groups,
 * each group its slots' one-byte states and then their messages (slot_at).
 * Positions in a segment are claimed with a CAS on `enq` (producers) and
 * `deq` (consumers) (push_claim says why not a fetch-and-add); `enq` at or
 * past the end means "this segment is used up".
 *
 * Why lock-free: every iteration of a push either publishes its message, or
 * finds its slot poisoned by a consumer (which made progress), or finds the
 * segment used up and links or follows the next one (a CAS that some thread
 * wins). A pop either takes a message, poisons an empty slot, finds the list
 * empty, moves the head to the next segment, or rereads `deq` after another
 * consumer claimed the slot it looked at. A claim's CAS that fails does so
 * because another thread's claim succeeded. No step waits for a particular
 * other thread (the bounded spin before poisoning only saves the late
 * producer a retry, the bounded pause after a lost claim only lets the
 * winner run on; the reclaim flag is only ever tried, never waited on).
 *
 * Cache lines: a pop reads the producers' `enq` line only when the slot at
 * `deq` holds nothing yet (the emptiness check); with messages waiting it
 * touches its own `deq` line and the slot's line (state and bytes), as a
 * push touches `enq` and the slot's line (docs/design.md counts them).
 *
 * Segments — their layout (list_impl.h), allocation, the spare, and which
 * to free through the epoch domain — live in channels/list_segs.c; this
 * file is the push and pop algorithm over them.
 */
#include "sluice/list.h"

#include <stdlib.h>
#include <string.h>

#include "rings.h"
#include "list_impl.h"
#include "internal/epoch.h"
#include "internal/spin.h"
#include "internal/util.h"
#include "internal/testing.h"
#include "internal/sysops.h"

/* A consumer that finds its slot empty while a producer has already claimed
 * it waits this many pause hints before poisoning it. */
#define LIST_EMPTY_SPIN 64

/* A thread whose claim lost to another's waits 1, 2, 4 ... pause hints,
 * doubling up to 2^LIST_CLAIM_BACKOFF_MAX (256, 5-13 us here), before its
 * next try (claim_backoff). */
#define LIST_CLAIM_BACKOFF_MAX 8

static size_t slots_for(size_t elem_size)
{
    /* About 32 KiB of messages per segment, between 32 and 1024 slots. */
    size_t n = (32 * 1024) / elem_size;
    return n < 32 ? 32 : n > 1024 ? 1024 : n;
}

/* The slot groups' geometry for q's message size (list_impl.h,
 * GROUP_STATES, says what a group is). */
static void group_layout(sl_list *q)
{
    q->word_bytes = (q->elem_size + 7) & ~(size_t)7;
    size_t k = (SL_CACHELINE - GROUP_STATES) / q->word_bytes;
#ifdef SL_MUTANT_LIST_GROUP_FORGETS_STATES
    k = SL_CACHELINE / q->word_bytes; /* planted bug: the last message overlaps the next states */
#endif
    q->group_slots = k ? k : 1;
    q->group_bytes = k >= 2 ? SL_CACHELINE : GROUP_STATES + q->word_bytes;
    /* Exact for every slot index below 2^32 / k (a segment has at most 1024). */
    q->group_recip = (UINT64_C(1) << 32) / q->group_slots + 1;
}

/* Slot i of a segment: its state, and where its message is. */
typedef struct list_slot {
    SL_ATOMIC(unsigned char) *state;
    unsigned char *bytes;
} list_slot;

static inline list_slot slot_at(const sl_list *q, sl_list_seg *s, uint64_t i)
{
    uint64_t g = (i * q->group_recip) >> 32, r = i - g * q->group_slots;
    unsigned char *group = s->groups + g * q->group_bytes;
    return (list_slot){(SL_ATOMIC(unsigned char) *)(void *)(group + r),
                       group + GROUP_STATES + r * q->word_bytes};
}

SL_API sl_status sl_list_init(sl_list *q, size_t elem_size)
{
    if (!q || elem_size == 0 || elem_size > SL_ELEM_MAX)
        return SL_EINVAL;
    memset(q, 0, sizeof *q);
    q->elem_size = elem_size;
    q->seg_slots = slots_for(elem_size);
    group_layout(q);
    atomic_init(&q->segs_live, 0);
    atomic_init(&q->spare, NULL);
    atomic_init(&q->reclaiming, 0u);
    sl_list_seg *first = sl__list_seg_alloc(q);
    if (!first)
        return SL_ENOMEM;
    first->base = 0;
    atomic_init(&q->oldest, first);
    atomic_init(&q->head, first);
    atomic_init(&q->tail, first);
    return SL_OK;
}

/* The tail segment is used up: link a new one carrying our message in slot 0,
 * or follow the one another producer linked. SL_OK: sent; SL_EMPTY: retry;
 * SL_ENOMEM: the list could not grow. */
static sl_status push_grow(sl_list *q, sl_list_seg *seg, const void *elem)
{
    sl_list_seg *next = atomic_load_explicit(&seg->next, memory_order_acquire);
    sl_list_seg *fresh = next ? NULL : sl__list_seg_get(q);
    if (!next && !fresh) {
#ifdef SL_MUTANT_LIST_ENOMEM_FIRST_LOOK
        return SL_ENOMEM; /* planted bug: ENOMEM although another producer may have grown it */
#endif
        /* No segment to be had, yet the list may have grown meanwhile: a
         * producer whose allocation succeeded linked one (this push goes on
         * into it), or a reclaimer put back a spare. Answering SL_ENOMEM
         * from the first look would report a list that could not grow when
         * it just did; from this second look it is true when said (the
         * answer's linearization point). Acquire: as the first look, for
         * the segment followed. */
        next = atomic_load_explicit(&seg->next, memory_order_acquire);
        if (!next && !(fresh = sl__list_take_spare(q)))
            return SL_ENOMEM;
    }
    if (fresh) {
        fresh->base = seg->base + q->seg_slots;
        list_slot first = slot_at(q, fresh, 0);
        memcpy(first.bytes, elem, q->elem_size);
        atomic_init(first.state, (unsigned char)SLOT_FULL);
        atomic_init(&fresh->enq, 1);
#ifdef SL_MUTANT_LIST_NEW_SEG_ENQ_ZERO
        atomic_init(&fresh->enq, 0); /* planted bug: slot 0 will be claimed again */
#endif
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
        sl__list_seg_put(q, fresh); /* never published */
    }
    /* Help the tail along; losing the race means someone else did. */
    atomic_compare_exchange_strong_explicit(&q->tail, &seg, next, memory_order_release,
                                            memory_order_relaxed);
    return SL_EMPTY;
}

/* The slot states a later push will publish with its CAS, fetched ahead
 * by the push that published slot i: a state's line was last written by a
 * consumer (TAKEN) or by the segment's reset, so it sits in another core's
 * cache, and a locked instruction lets nothing overlap the miss (as
 * channels/cellring.h's sl__cellring_fetch_ahead for the rings). Grouped
 * slots (up to 24 bytes): the next group's line, by the push that starts a
 * group. A slot of its own: the slot two ahead, so that the line has two
 * pushes' time to arrive (one ahead measured slower at 64 bytes). Within
 * the segment only. docs/performance.md, "The next line fetched ahead". */
static inline void push_fetch_ahead(const sl_list *q, sl_list_seg *seg, uint64_t i,
                                    list_slot slot)
{
    if (!sl__prefetchw_known)
        return;
    if (q->group_slots >= 2) {
        uint64_t g = (i * q->group_recip) >> 32; /* as slot_at */
        if (i == g * q->group_slots && i + q->group_slots < q->seg_slots)
            sl__prefetch_for_write((unsigned char *)slot.state + q->group_bytes);
    } else if (i + 2 < q->seg_slots) {
        sl__prefetch_for_write(slot_at(q, seg, i + 2).state);
    }
}

/* Claims take a position with a CAS from the one seen to the next, not a
 * fetch-and-add, so that a thread learns when it met another and can stand
 * back: after a lost CAS it waits claim_backoff's doubling pause. Two
 * threads of one side on the two cores otherwise alternate positions, and
 * the counter's line and every slot line travel between them once a
 * message; standing back lets the winner claim a run of positions with its
 * lines at home (crossbeam's list does the same). A lost CAS means another
 * thread's claim succeeded, so the claim stays lock-free, and a successful
 * one is a fetch-and-add that found what it expected: every execution is
 * one the fetch-and-add algorithm has too (guarantees.md, SL_LIST).
 * docs/performance.md, "Claims that stand back". */
static inline void claim_backoff(unsigned *step)
{
    for (unsigned k = 0; k < (1u << *step); k++)
        sl_cpu_relax();
    if (*step < LIST_CLAIM_BACKOFF_MAX)
        (*step)++;
}

/* The thread's guess for a push into seg (push_claim), or `none`. Two are
 * kept, for the last two segments it pushed into, so that a thread feeding
 * two lists in turn (a pool's round-robin submitter with two inboxes, a
 * sender alternating between two channels) guesses right in both: with one,
 * every such push read `enq` first. */
static inline uint64_t guess_for(const sl_epoch_rec *self, const sl_list_seg *seg,
                                 uint64_t none)
{
    if (!self)
        return none;
    if (self->push_guess[0].seg == seg)
        return self->push_guess[0].next;
    return self->push_guess[1].seg == seg ? self->push_guess[1].next : none;
}

/* Records the claim of slot i of seg as the thread's newest guess; the
 * other segment's, whichever was newest before, is kept as the older. */
static inline void guess_keep(sl_epoch_rec *self, const sl_list_seg *seg, uint64_t i)
{
    if (!self)
        return;
    if (self->push_guess[0].seg != seg) {
        self->push_guess[1] = self->push_guess[0];
        self->push_guess[0].seg = seg;
    }
    self->push_guess[0].next = i + 1;
}

/* A push's claim of a slot of seg: its index, or seg_slots when seg is used
 * up. The CAS starts from a guess, this thread's last claim in seg plus one
 * (kept in its record: guess_for), right whenever no other producer claimed
 * since: then the CAS is the one access to `enq`, where a load first would
 * bring the line in shared for a consumer's emptiness check to read and the
 * CAS would need it again (a ping-pong's round trip measured 6-15 % longer).
 * A wrong guess only fails the CAS, which returns the true value; a guess at
 * or past the end is not trusted (the segment may be a new one at the same
 * address) and `enq` is read instead. */
static inline uint64_t push_claim(const sl_list *q, sl_list_seg *seg, sl_epoch_rec *self)
{
    uint64_t i = guess_for(self, seg, q->seg_slots);
#ifdef SL_MUTANT_LIST_GUESS_TRUSTED
    if (i < q->seg_slots) { /* planted bug: the guess taken as the claim, unchecked */
        atomic_store_explicit(&seg->enq, i + 1, memory_order_seq_cst);
        guess_keep(self, seg, i);
        return i;
    }
#endif
    if (i >= q->seg_slots)
        i = atomic_load_explicit(&seg->enq, memory_order_relaxed);
    SL_FI(); /* another producer may claim now: the CAS then fails */
    unsigned step = 0;
    /* seq_cst: a parked receiver's emptiness re-check compares deq with enq;
     * the claim must be in the same total order as its fence. */
    while (i < q->seg_slots &&
           !atomic_compare_exchange_weak_explicit(&seg->enq, &i, i + 1, memory_order_seq_cst,
                                                  memory_order_relaxed))
        claim_backoff(&step);
    guess_keep(self, seg, i);
    return i;
}

static sl_status push_locked(sl_list *q, const void *elem, sl_epoch_rec *self)
{
    for (;;) {
        /* seq_cst: after the epoch announcement (internal/epoch.h); acquire
         * makes the segment's initialisation visible. */
        sl_list_seg *seg = atomic_load_explicit(&q->tail, memory_order_seq_cst);
        SL_FI();
        uint64_t i = push_claim(q, seg, self);
        if (i >= q->seg_slots) {
            sl_status st = push_grow(q, seg, elem);
            if (st != SL_EMPTY)
                return st;
            sl__epoch_refresh(self); /* holds nothing now: stop pinning seg */
            continue;
        }
        list_slot slot = slot_at(q, seg, i);
        sl__copy_msg(slot.bytes, elem, q->elem_size); /* inline for 4-64 B */
        SL_FI(); /* claimed, not published: a receiver may poison the slot now */
        unsigned char expect = SLOT_EMPTY;
        /* seq_cst: releases the bytes to the consumer that takes the slot and
         * is the condition change a parked receiver pairs with. */
        if (atomic_compare_exchange_strong_explicit(slot.state, &expect,
                                                    (unsigned char)SLOT_FULL,
                                                    memory_order_seq_cst,
                                                    memory_order_relaxed)) {
            push_fetch_ahead(q, seg, i, slot);
            return SL_OK;
        }
#ifdef SL_MUTANT_LIST_OK_AFTER_POISON
        return SL_OK; /* planted bug: the poisoned slot's message is lost */
#endif
        /* A consumer poisoned the slot before we published: try a later one. */
    }
}

SL_API sl_status sl_list_try_push(sl_list *q, const void *elem)
{
    if (!q || !elem)
        return SL_EINVAL;
    sl_epoch_rec *self = sl__epoch_enter();
    sl_status st = push_locked(q, elem, self);
    sl__epoch_exit(self);
    return st;
}

/* For a channel's sender, which entered the epoch with its in-flight mark
 * (channels/chan_marks.h, epoch_mark): self is sl__epoch_self, NULL when
 * anonymous. */
sl_status sl__list_push_entered(sl_list *q, const void *elem, sl_epoch_rec *self)
{
    return push_locked(q, elem, self);
}

/* Between two messages the batch holds no segment: it renews its
 * announcement there (sl__epoch_renew), or a long batch would keep every
 * list's retired segments from being freed for as long as it ran. */
size_t sl__list_push_n_entered(sl_list *q, const void *elems, size_t n, sl_epoch_rec *self)
{
    const unsigned char *p = elems;
    size_t done = 0;
    while (done < n && push_locked(q, p + done * q->elem_size, self) == SL_OK) {
        done++;
#ifndef SL_MUTANT_LIST_BATCH_KEEPS_EPOCH /* planted bug when defined */
        sl__epoch_renew(self);
#endif
    }
    return done;
}

/* The head segment is used up. Returns false if there is no next segment
 * (the list is empty); otherwise moves the head on (retiring the old segment
 * if this thread moved it) and returns true. */
static bool pop_advance(sl_list *q, sl_list_seg *seg, const sl_epoch_rec *self)
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
    if (atomic_compare_exchange_strong_explicit(&q->head, &seg, next, memory_order_seq_cst,
                                                memory_order_relaxed)) {
        /* Release: the stamp (taken after the unlink) is read before a
         * reclaimer's scan. This thread touches seg no more. */
        uint64_t unstamped = 0;
        /* A CAS: a reclaimer may have stamped it first (list_segs.c,
         * stamp_unlinked). */
        atomic_compare_exchange_strong_explicit(&seg->retired, &unstamped, sl__epoch_stamp(),
                                                memory_order_release, memory_order_relaxed);
        sl__list_reclaim(q, self);
    }
    return true;
}

/* The slot this pop claimed is not published yet: its producer claimed it
 * and has still to write it. Spins a little for it, then poisons the slot
 * with an exchange, which decides the race with the producer's CAS: true if
 * the message came after all (the slot is then TAKEN by this pop). */
static bool pop_wait_or_poison(SL_ATOMIC(unsigned char) *state)
{
    for (unsigned k = 0; k < LIST_EMPTY_SPIN; k++) {
        sl_cpu_relax();
        if (atomic_load_explicit(state, memory_order_relaxed) != SLOT_EMPTY)
            break;
    }
#ifdef SL_MUTANT_LIST_DROP_LATE_FULL
    atomic_store_explicit(state, (unsigned char)SLOT_TAKEN, memory_order_relaxed);
    return false; /* planted bug: drops a message that arrived while it waited */
#endif
    SL_FI();
#ifdef SL_MUTANT_LIST_POISON_BY_STORE
    /* planted bug: the plain store of pop_take, where the producer races */
    if (atomic_load_explicit(state, memory_order_acquire) == SLOT_FULL)
        return true;
    SL_FI();
    atomic_store_explicit(state, (unsigned char)SLOT_TAKEN, memory_order_relaxed);
    return false;
#endif
    /* Acquire: pairs with the producer's publishing CAS. */
    return atomic_exchange_explicit(state, (unsigned char)SLOT_TAKEN, memory_order_acq_rel) ==
           SLOT_FULL;
}

/* Takes a slot this pop claimed: true with the message in out, or false
 * after poisoning the still-empty slot. */
static bool pop_take(const sl_list *q, list_slot slot, void *out)
{
    SL_ATOMIC(unsigned char) *state = slot.state;
    /* Acquire: pairs with the producer's publishing CAS (the bytes). */
    if (atomic_load_explicit(state, memory_order_acquire) != SLOT_FULL &&
        !pop_wait_or_poison(state))
        return false;
    sl__copy_msg(out, slot.bytes, q->elem_size); /* inline for 4-64 B */
    /* FULL is final for the producer, and this pop alone claimed the slot,
     * so nobody else writes this state again: a plain store marks it taken,
     * where an exchange would stall the pop for the line (guarantees.md,
     * SL_LIST "Pop"). Release: a pop that reads TAKEN finds deq past it. */
    SL_FI();
    atomic_store_explicit(state, (unsigned char)SLOT_TAKEN, memory_order_release);
    return true;
}

/* A pop found the list empty at the head segment seg: give back what
 * earlier pops could not free yet (threads were inside then). Both ways of
 * finding it empty come here: nothing published at the head's next slot, or
 * the head used up with no next segment (a burst drained exactly at a
 * segment's end, which kept every unfreed segment until the next growth). */
static void pop_idle(sl_list *q, sl_list_seg *seg, const sl_epoch_rec *self)
{
    if (atomic_load_explicit(&q->oldest, memory_order_relaxed) != seg)
        sl__list_reclaim(q, self);
}

/* Nothing is published at slot d (< seg_slots) of the head segment seg: is
 * the list empty? Only this case reads the producers' `enq` line. */
static bool pop_sees_empty(sl_list *q, sl_list_seg *seg, uint64_t d, const sl_epoch_rec *self)
{
    uint64_t e = atomic_load_explicit(&seg->enq, memory_order_seq_cst);
    if (d < e || atomic_load_explicit(&seg->next, memory_order_seq_cst) != NULL)
        return false;
    pop_idle(q, seg, self);
    return true;
}

static sl_status pop_locked(sl_list *q, void *out, sl_epoch_rec *self)
{
    unsigned step = 0; /* claim_backoff's */
    for (;;) {
        /* seq_cst: after the epoch announcement (internal/epoch.h). */
        sl_list_seg *seg = atomic_load_explicit(&q->head, memory_order_seq_cst);
        uint64_t d = atomic_load_explicit(&seg->deq, memory_order_seq_cst);
        if (d >= q->seg_slots) {
            if (!pop_advance(q, seg, self)) {
#ifndef SL_MUTANT_LIST_IDLE_AT_BOUNDARY_KEEPS /* planted bug when defined */
                pop_idle(q, seg, self);
#endif
                return SL_EMPTY;
            }
            sl__epoch_refresh(self); /* holds nothing now: stop pinning seg */
            continue;
        }
        /* Acquire: TAKEN means the claim of d is done, so deq is past d. */
        list_slot at_d = slot_at(q, seg, d);
        unsigned char st = atomic_load_explicit(at_d.state, memory_order_acquire);
        if (st == SLOT_TAKEN)
            continue; /* another consumer has slot d: read deq again */
        if (st == SLOT_EMPTY && pop_sees_empty(q, seg, d, self))
            return SL_EMPTY;
        SL_FI();
        /* The claim of slot d (push_claim says why a CAS); seq_cst as the
         * push's. Lost: another consumer took d, so look again. */
        if (!atomic_compare_exchange_strong_explicit(&seg->deq, &d, d + 1, memory_order_seq_cst,
                                                     memory_order_relaxed)) {
            claim_backoff(&step);
            continue;
        }
        if (pop_take(q, at_d, out))
            return SL_OK;
    }
}

SL_API sl_status sl_list_try_pop(sl_list *q, void *out)
{
    if (!q || !out)
        return SL_EINVAL;
    sl_epoch_rec *self = sl__epoch_enter();
    sl_status st = pop_locked(q, out, self);
    sl__epoch_exit(self);
    return st;
}

SL_API size_t sl_list_push_n(sl_list *q, const void *elems, size_t n)
{
    if (!q || !elems)
        return 0;
    sl_epoch_rec *self = sl__epoch_enter();
    size_t done = sl__list_push_n_entered(q, elems, n, self);
    sl__epoch_exit(self);
    return done;
}

SL_API size_t sl_list_pop_n(sl_list *q, void *out, size_t n)
{
    unsigned char *p = out;
    size_t done = 0;
    if (!q || !out)
        return 0;
    sl_epoch_rec *self = sl__epoch_enter();
    while (done < n && pop_locked(q, p + done * q->elem_size, self) == SL_OK)
        done++;
    sl__epoch_exit(self);
    return done;
}

static uint64_t position(const sl_list *q, sl_list_seg *s, SL_ATOMIC(uint64_t) *index)
{
    uint64_t i = atomic_load_explicit(index, memory_order_acquire);
#ifdef SL_MUTANT_LIST_LEN_FULL_SEG
    return s->base + (i < q->seg_slots ? i : q->seg_slots - 1); /* planted bug */
#endif
    return s->base + (i < q->seg_slots ? i : q->seg_slots);
}

SL_API size_t sl_list_len(const sl_list *q)
{
    if (!q)
        return 0;
    sl_epoch_rec *self = sl__epoch_enter();
    /* seq_cst: after the epoch announcement (internal/epoch.h). */
    sl_list_seg *h = atomic_load_explicit(&q->head, memory_order_seq_cst);
    uint64_t popped = position(q, h, &h->deq);
    sl_list_seg *t = atomic_load_explicit(&q->tail, memory_order_seq_cst);
    uint64_t pushed = position(q, t, &t->enq);
    sl__epoch_exit(self);
    return pushed > popped ? (size_t)(pushed - popped) : 0;
}

void sl__list_drain(sl_list *q, sl_visit_fn fn, void *ctx)
{
    sl_list_seg *seg = atomic_load_explicit(&q->head, memory_order_acquire);
    for (; seg; seg = atomic_load_explicit(&seg->next, memory_order_acquire)) {
        uint64_t end = atomic_load_explicit(&seg->enq, memory_order_acquire);
        uint64_t i = atomic_load_explicit(&seg->deq, memory_order_acquire);
        for (end = end < q->seg_slots ? end : q->seg_slots; i < end; i++) {
            list_slot slot = slot_at(q, seg, i);
            if (atomic_load_explicit(slot.state, memory_order_acquire) != SLOT_FULL)
                continue;
            if (fn)
                fn(slot.bytes, ctx);
            atomic_store_explicit(slot.state, (unsigned char)SLOT_TAKEN, memory_order_relaxed);
        }
        atomic_store_explicit(&seg->deq, end, memory_order_relaxed);
    }
}

