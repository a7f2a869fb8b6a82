/*
 * channels/broadcast.c — broadcast channels (SL_BROADCAST): the shared ring
 * of stamped slots (channels/broadcast.h) and sl_chan_subscribe /
 * sl_chan_missed (sluice/broadcast.h).
 *
 * The send handle and each subscriber handle are ordinary sl_chan structs of
 * the SL_BROADCAST flavour; the façade reaches this file through the
 * flavour's adapter (chan_flavors.h). The ring itself is shared and
 * reference-counted, so that any handle may be freed first.
 *
 * Message bytes live in 8-byte atomic words, written and read with relaxed
 * stores and loads between the stamp's fences (the seqlock of Boehm, "Can
 * seqlocks get along with programming language memory models?", 2012): a
 * copy racing an overwrite is a data race on nothing, and the re-read stamp
 * tells the reader whether to trust it.
 */
#include "sluice/broadcast.h"
#include "broadcast.h"

#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "chan_impl.h"
#include "internal/spin.h"
#include "internal/sysops.h"
#include "internal/testing.h"

#define WORD sizeof(uint64_t)

static inline uint64_t stamp_writing(uint64_t p) { return 2 * p + 1; }
static inline uint64_t stamp_done(uint64_t p) { return 2 * p + 2; }

/* Position p's slot: its stamp, followed by b->words words of message. */
static inline SL_ATOMIC(uint64_t) *slot_of(const sl__bcast *b, uint64_t p)
{
    return b->slots + (p % b->cap) * (1 + b->words);
}

static void copy_in(SL_ATOMIC(uint64_t) *w, const unsigned char *src, size_t n)
{
    for (size_t i = 0; i < n; i += WORD) {
        uint64_t v = 0;
        memcpy(&v, src + i, n - i < WORD ? n - i : WORD);
        atomic_store_explicit(&w[i / WORD], v, memory_order_relaxed); /* ordered by the stamps */
    }
}

static void copy_out(unsigned char *dst, const SL_ATOMIC(uint64_t) *w, size_t n)
{
    for (size_t i = 0; i < n; i += WORD) {
        uint64_t v = atomic_load_explicit(&w[i / WORD], memory_order_relaxed); /* checked by the stamp */
        memcpy(dst + i, &v, n - i < WORD ? n - i : WORD);
    }
}

/* With a drop function: position p's share word, followed by the epoch
 * its sender saw (channels/broadcast.h); and p's lap as a share word holds
 * it. */
#define NMASK ((UINT64_C(1) << SL__BCAST_NBITS) - 1)
static inline SL_ATOMIC(uint64_t) *share_of(const sl__bcast *b, uint64_t p)
{
    return b->shares + 2 * (p % b->cap);
}
static inline uint64_t lap_of(const sl__bcast *b, uint64_t p)
{
    return (p / b->cap) & (UINT64_MAX >> SL__BCAST_NBITS);
}

/* The ring a subscriber being made joins: set by sl_chan_subscribe around
 * its sl__chan_new_at, read by the init that call makes on this thread. */
static _Thread_local sl__bcast *attaching;

static sl_status ring_new(sl__bcast_end *e, const sl_chan_opts *o)
{
    if (o->elem_size == 0 || o->elem_size > SL_ELEM_MAX || o->capacity == 0)
        return SL_EINVAL;
    size_t words = (o->elem_size + WORD - 1) / WORD;
    if (o->capacity > SIZE_MAX / WORD / (1 + words))
        return SL_EINVAL;
    sl__bcast *b = sl__alloc(SL_CACHELINE, sizeof *b);
    if (!b)
        return SL_ENOMEM;
    memset(b, 0, sizeof *b);
    b->slots = sl__calloc(o->capacity * (1 + words), WORD); /* stamps 0: never written */
    /* Share words 0: lap 0, nobody to read (a first-lap sender takes no drop). */
    b->shares = o->drop && b->slots ? sl__calloc(2 * o->capacity, WORD) : NULL;
    if (!b->slots || (o->drop && !b->shares)) {
        free(b->slots);
        free(b);
        return SL_ENOMEM;
    }
    b->cap = o->capacity;
    b->elem_size = o->elem_size;
    b->words = words;
    b->drop = o->drop;
    b->drop_ctx = o->drop_ctx;
    atomic_init(&b->refs, 1u);
    sl_event_init(&b->ready);
    e->b = b;
    e->subscriber = false;
    e->scratch = NULL;
    return SL_OK;
}

/* Waits until the stamp of slot s reaches `least` and returns it. Only a
 * sender between its claim and its complete stamp holds a slot back: the
 * caller has seen that sender's claim. Acquire: that sender's words, share
 * word and epoch (and stamp) before what the caller does next. */
static uint64_t await_stamp(SL_ATOMIC(uint64_t) *s, uint64_t least)
{
    uint64_t st;
    for (unsigned spins = 0; (st = atomic_load_explicit(s, memory_order_acquire)) < least; spins++) {
        if (spins < 64)
            sl_cpu_relax();
        else
            sched_yield(); /* the sender ahead may need this core */
    }
    return st;
}

/* Gives up one subscriber's share of position p, after the subscriber's own
 * copy of it: true when that was the last share (the caller then drops p,
 * from its copy). False once p's sender a lap later has taken the word over
 * (that sender dropped p with this share still counted). acq_rel: every
 * copy of p whose share was given up before the drop of p. */
static bool release_share(const sl__bcast *b, uint64_t p)
{
    SL_ATOMIC(uint64_t) *w = share_of(b, p);
    uint64_t v = atomic_load_explicit(w, memory_order_relaxed);
    do {
        if (v >> SL__BCAST_NBITS != lap_of(b, p) || (v & NMASK) == 0)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(w, &v, v - 1, memory_order_acq_rel,
                                                    memory_order_relaxed));
    return (v & NMASK) == 1;
}

/* A subscribe or a leave settles position p, claimed before its tail load:
 * waits until p is complete (only p's sender, mid-write, holds it back);
 * then, if p's sender counted this subscriber (the epoch it saw is in
 * [lo, hi)) and p is still held, gives up the share as a read would. */
static void settle(sl__bcast_end *e, uint64_t p, uint64_t lo, uint64_t hi)
{
    sl__bcast *b = e->b;
    SL_ATOMIC(uint64_t) *s = slot_of(b, p);
    if (await_stamp(s, stamp_done(p)) != stamp_done(p))
        return; /* overwritten: the sender of p + cap drops it, this share counted */
    /* Relaxed: after the stamp's acquire; a later sender's epoch, if read
     * here, fails the re-check below (or this share is its to drop). */
    uint64_t ep = atomic_load_explicit(share_of(b, p) + 1, memory_order_relaxed);
    if (ep < lo || ep >= hi)
        return; /* not counted: p's sender loaded `subs` outside the subscription */
    copy_out(e->scratch, s + 1, b->elem_size);
    atomic_thread_fence(memory_order_acquire); /* the copy before the re-check (as look) */
    if (atomic_load_explicit(s, memory_order_relaxed) == stamp_done(p) && release_share(b, p))
        b->drop(e->scratch, b->drop_ctx);
}

/* With a drop function: joins the count in `subs`, starts at the tail, and
 * settles the positions claimed before that tail which counted it anyway
 * (their senders loaded `subs` after the join: guarantees.md, "Broadcast
 * channels", shares). SL_ENOMEM when the count is full. */
static sl_status join(sl__bcast_end *e)
{
    sl__bcast *b = e->b;
    /* seq_cst, all four: in the total order with the senders' claims and
     * their loads of `subs`, and with the in-flight marks. */
    uint64_t t0 = atomic_load_explicit(&b->tail, memory_order_seq_cst);
    uint32_t busy = atomic_load_explicit(&b->in_flight, memory_order_seq_cst);
    uint64_t v = atomic_load_explicit(&b->subs, memory_order_relaxed);
    do {
        if ((v & NMASK) == NMASK)
            return SL_ENOMEM;
    } while (!atomic_compare_exchange_weak_explicit(&b->subs, &v, v + NMASK + 2,
                                                    memory_order_seq_cst, memory_order_relaxed));
    e->epoch = (v + NMASK + 2) >> SL__BCAST_NBITS; /* one more subscriber, the next epoch */
    uint64_t t = atomic_load_explicit(&b->tail, memory_order_seq_cst);
    atomic_init(&e->next, t);
    /* No sender in flight before the join: none below t0 can have counted it. */
    uint64_t from = busy ? 0 : t0;
#ifdef SL_MUTANT_BCAST_JOIN_NO_SETTLE /* planted bug: a join never settles the positions below its start */
    from = t;
#endif
    if (t > b->cap && from < t - b->cap)
        from = t - b->cap; /* below: overwrites claimed, which drop with the share */
    for (uint64_t p = from; p < t; p++)
        settle(e, p, e->epoch, UINT64_MAX);
    return SL_OK;
}

/* With a drop function: leaves the count in `subs` and gives up the share
 * of every position it was counted for and did not read. Those below
 * tail - cap have their overwrites claimed, which drop them. */
static void leave(sl__bcast_end *e)
{
    sl__bcast *b = e->b;
    /* seq_cst: as join's, the count's change before the tail's load. */
    uint64_t v = atomic_fetch_add_explicit(&b->subs, NMASK, memory_order_seq_cst);
    uint64_t hi = (v + NMASK) >> SL__BCAST_NBITS; /* one fewer subscriber, the next epoch */
    uint64_t t = atomic_load_explicit(&b->tail, memory_order_seq_cst);
    uint64_t p = atomic_load_explicit(&e->next, memory_order_relaxed); /* our own */
#ifdef SL_MUTANT_BCAST_LEAVER_FORGETS /* planted bug: a leaver keeps its unread window's shares */
    p = t;
#endif
    if (t > b->cap && p < t - b->cap)
        p = t - b->cap;
    for (; p < t; p++)
        settle(e, p, e->epoch, hi);
}

sl_status sl__bcast_init(sl__bcast_end *e, const sl_chan_opts *o)
{
    if (!attaching)
        return ring_new(e, o);
    e->b = attaching;
    /* Consumed here: the join below may run the drop function, which may
     * make a broadcast channel of its own (a new ring, not a subscriber). */
#ifndef SL_MUTANT_BCAST_ATTACHING_KEPT /* planted bug: a drop's new channel joins this ring */
    attaching = NULL;
#endif
    e->subscriber = true;
    e->scratch = NULL;
    atomic_init(&e->missed, 0u);
    if (e->b->drop) {
        e->scratch = sl__alloc(WORD, e->b->words * WORD);
        if (!e->scratch)
            return SL_ENOMEM;
        sl_status st = join(e);
        if (st != SL_OK) {
            free(e->scratch);
            e->scratch = NULL;
            return st;
        }
    } else {
        /* Relaxed: a send that returned before the subscription began claimed
         * its position before this load (happens-before), so it is not seen;
         * every send that starts after the subscription returned claims a
         * later one. */
        atomic_init(&e->next, atomic_load_explicit(&e->b->tail, memory_order_relaxed));
    }
    /* Relaxed: the caller holds a reference (its send handle) throughout. */
    atomic_fetch_add_explicit(&e->b->refs, 1u, memory_order_relaxed);
    return SL_OK;
}

/* Drops every message still held and not yet dropped by its last reader,
 * oldest first. The last handle is gone: no sender is in flight, every
 * claimed position is complete, every subscriber has left. */
static void drop_held(sl__bcast *b)
{
    uint64_t t = atomic_load_explicit(&b->tail, memory_order_relaxed);
    for (uint64_t p = t > b->cap ? t - b->cap : 0; p < t; p++) {
        SL_ATOMIC(uint64_t) *s = slot_of(b, p);
        if (atomic_load_explicit(s, memory_order_relaxed) != stamp_done(p))
            continue;
        uint64_t w = atomic_load_explicit(share_of(b, p), memory_order_relaxed);
        if (w >> SL__BCAST_NBITS == lap_of(b, p) && (w & NMASK) != 0) /* not dropped yet */
            b->drop((void *)(s + 1), b->drop_ctx);
    }
}

/* Wakes every parked subscriber, and the select bell once a subscriber has
 * been a select case. The caller's change (a stamp, a close, an unmark) comes
 * before the waiter loads: the await protocol (internal/await.h). */
static void wake_subscribers(sl__bcast *b)
{
    sl_event_fence(); /* the change before the waiter-count loads below */
    /* seq_cst: the Dekker load (internal/await.h); nobody parked, no call. */
    if (atomic_load_explicit(&b->ready.waiters, memory_order_seq_cst) != 0)
        sl__event_notify_counted(&b->ready, &b->unwoken, SL__NOTIFY_ALL);
    /* seq_cst: after the change in the total order; the other side is the
     * flag's setting in end_or_mark (heavy-fenced there). */
    if (atomic_load_explicit(&b->selected, memory_order_seq_cst))
        sl__select_ring(SL__READY_RECV); /* notifies while a selector has armed a bell (select.c) */
}

void sl__bcast_release(sl__bcast_end *e)
{
    sl__bcast *b = e->b;
    if (e->scratch) { /* a subscriber of a ring with a drop function */
        leave(e);
        free(e->scratch);
    }
    if (!e->subscriber) {
        /* The send handle leaves: no send can come any more (free requires
         * that none is in flight), so the ring is closed for everyone. */
        atomic_store_explicit(&b->closed, 1u, memory_order_seq_cst);
        wake_subscribers(b);
    }
    /* acq_rel: every handle's last use of the ring before the free below. */
    if (atomic_fetch_sub_explicit(&b->refs, 1u, memory_order_acq_rel) != 1)
        return;
    if (b->drop)
        drop_held(b);
    free(b->shares);
    free(b->slots);
    free(b);
}

uint32_t sl__bcast_sending(const sl_chan *ch)
{
    const sl__bcast_end *e = &ch->q.bcast;
    /* Acquire: as the free's other counts (refuse_free_in_use). */
    return e->subscriber ? 0 : atomic_load_explicit(&e->b->in_flight, memory_order_acquire);
}

/* A subscriber handle's send is refused (SL_EINVAL, or SL_CLOSED): its mark
 * must not count among the ring's sends in flight, which the send handle's
 * free reads as its own (sl__bcast_sending). It marks this ring, which is
 * never closed: its unmark wakes nobody. */
static sl__bcast refused_sends __attribute__((unused)); /* unused with a planted bug */

SL_ATOMIC(uint32_t) *sl__bcast_mark(sl_chan *ch)
{
    sl__bcast_end *e = &ch->q.bcast;
#ifndef SL_MUTANT_BCAST_REFUSED_SEND_COUNTED /* planted bug: counted as the send handle's */
    if (e->subscriber) {
        atomic_fetch_add_explicit(&refused_sends.in_flight, 1u, memory_order_relaxed);
        return &refused_sends.in_flight;
    }
#endif
    /* seq_cst: the mark before the sender's closed-check (chan_marks.h,
     * "senders in flight"), with the subscribers' loads of `closed` and of
     * this count as the other side (end_or_mark). */
    atomic_fetch_add_explicit(&e->b->in_flight, 1u, memory_order_seq_cst);
    return &e->b->in_flight;
}

void sl__bcast_unmark(SL_ATOMIC(uint32_t) *mark)
{
    sl__bcast *b = (sl__bcast *)(void *)((char *)mark - offsetof(sl__bcast, in_flight));
    /* seq_cst: the unmark (after the push) before the closed load that follows. */
    atomic_fetch_sub_explicit(mark, 1u, memory_order_seq_cst);
    /* A subscriber may wait for the last sender in flight to decide that its
     * subscription has ended: after a close, every unmark wakes them. */
    if (atomic_load_explicit(&b->closed, memory_order_seq_cst))
        wake_subscribers(b);
}

/* Waits until position p's slot no longer holds a message being written a
 * lap earlier: its stamp says p - cap is complete (or, on the first lap,
 * nothing was ever written; no stamp passes p - cap's before ours). Only a
 * sender that claimed p - cap and has not finished holds it back. Acquire
 * (await_stamp): that sender's words (and stamp) come before ours in each
 * word's modification order, and its message before the drop that reads it. */
static void wait_for_lap(SL_ATOMIC(uint64_t) *s, uint64_t p, size_t cap)
{
    await_stamp(s, p >= cap ? stamp_done(p - cap) : 0);
}

/* With a drop function, after p's writing stamp: counts the subscribers
 * that will read p (seq_cst load of `subs`, after the seq_cst claim: the
 * order the subscribes and leaves rely on), and takes the slot's share word
 * over from p - cap with one exchange. p - cap's original is dropped here
 * unless its last reader gave up the last share first: whichever of the two
 * RMWs on the word comes first decides, so exactly one drops. acq_rel: the
 * copies of the readers that gave up their shares before this drop. */
static uint64_t take_slot(sl__bcast *b, uint64_t p, SL_ATOMIC(uint64_t) *s)
{
    uint64_t v = atomic_load_explicit(&b->subs, memory_order_seq_cst);
    SL_ATOMIC(uint64_t) *w = share_of(b, p);
    atomic_store_explicit(w + 1, v >> SL__BCAST_NBITS, memory_order_relaxed); /* ordered by the stamps */
    uint64_t old = atomic_exchange_explicit(w, lap_of(b, p) << SL__BCAST_NBITS | (v & NMASK),
                                            memory_order_acq_rel);
#ifndef SL_MUTANT_BCAST_NO_OVERWRITE_DROP /* planted bug: an overwritten original is never dropped */
    if (p >= b->cap && old >> SL__BCAST_NBITS == lap_of(b, p - b->cap) && (old & NMASK) != 0)
        b->drop((void *)(s + 1), b->drop_ctx); /* the channel's original of p - cap */
#else
    (void)old;
#endif
    return v & NMASK;
}

/* Writes p's message with a drop function: takes the slot over (take_slot),
 * and drops the message at once when nobody was counted to read it (no
 * subscriber can ever see it; the slot is still ours: writing stamp). */
static void write_counted(sl__bcast *b, uint64_t p, SL_ATOMIC(uint64_t) *s, const void *elem)
{
    uint64_t readers = take_slot(b, p, s);
    copy_in(s + 1, elem, b->elem_size);
    if (readers == 0)
        b->drop((void *)(s + 1), b->drop_ctx);
}

sl_status sl__bcast_push(sl_chan *ch, const void *elem)
{
    sl__bcast_end *e = &ch->q.bcast;
    if (e->subscriber)
        return SL_EINVAL;
    sl__bcast *b = e->b;
    /* seq_cst: with a drop function, the claim before take_slot's load of
     * `subs` (without one, relaxed would do: the count only hands out
     * positions and the stamps order the rest; on x86 it is the same
     * instruction, and one order saves a branch). */
    uint64_t p = atomic_fetch_add_explicit(&b->tail, 1u, memory_order_seq_cst);
    SL_ATOMIC(uint64_t) *s = slot_of(b, p);
#ifdef SL_MUTANT_BCAST_SENDERS_SHARE_SLOT /* planted bug: a lap-later sender does not wait */
    (void)wait_for_lap;
#else
    wait_for_lap(s, p, b->cap);
#endif
    atomic_store_explicit(s, stamp_writing(p), memory_order_relaxed);
    /* Release fence: the writing stamp before the word stores below, so that
     * a reader whose copy saw one of them sees the stamp at its re-check. */
    atomic_thread_fence(memory_order_release);
    SL_FI(); /* slot claimed for writing, bytes not yet written */
    if (b->drop)
        write_counted(b, p, s, elem);
    else
        copy_in(s + 1, elem, b->elem_size);
    /* Release: the words before the complete stamp a reader acquires. */
    atomic_store_explicit(s, stamp_done(p), memory_order_release);
    wake_subscribers(b);
    return SL_OK;
}

/* One look at position p: SL_OK with its message in out; SL_LAGGED when p
 * was overwritten (before or during the copy: out then holds no message);
 * SL_EMPTY when p is not complete yet — not sent, or its sender is still
 * writing it. */
static sl_status look(const sl__bcast *b, uint64_t p, void *out)
{
    SL_ATOMIC(uint64_t) *s = slot_of(b, p);
    /* Acquire: pairs with the complete stamp's release; its words are visible. */
    uint64_t st = atomic_load_explicit(s, memory_order_acquire);
    if (st != stamp_done(p))
        return st > stamp_done(p) ? SL_LAGGED : SL_EMPTY; /* stamps only grow */
    SL_FI(); /* seen complete, not yet copied: an overwrite may come first */
    copy_out(out, s + 1, b->elem_size);
#ifndef SL_MUTANT_BCAST_NO_RECHECK /* planted bug: a copy torn by an overwrite is returned */
    /* Acquire fence: the copy's loads before the stamp's re-load. If any of
     * them read a word of a later message, that writer's release fence makes
     * its writing stamp visible here. */
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(s, memory_order_relaxed) != stamp_done(p))
        return SL_LAGGED;
#endif
    return SL_OK;
}

/* Moves a subscriber past what its look found: past p on SL_OK; on
 * SL_LAGGED to the oldest position still held (tail - cap: positions below
 * it have been claimed for overwriting), counting the skipped ones. */
static sl_status advance(sl__bcast_end *e, uint64_t p, sl_status st)
{
    uint64_t next = p + 1;
    if (st == SL_LAGGED) {
        /* Relaxed: any tail read after the stamp gives positions that are
         * truly gone; a lap's worth is at least p + 1. */
        uint64_t t = atomic_load_explicit(&e->b->tail, memory_order_relaxed);
        next = t > p + e->b->cap ? t - e->b->cap : p + 1;
#ifdef SL_MUTANT_BCAST_LAG_MISCOUNT
        next += 1; /* planted bug: a lag skips one message more than it reports */
        atomic_fetch_sub_explicit(&e->missed, 1u, memory_order_relaxed);
#endif
        /* Relaxed: only this subscriber's receiving thread writes it. */
        atomic_fetch_add_explicit(&e->missed, next - p, memory_order_relaxed);
        /* No share is given up for the positions skipped: each has its
         * overwrite claimed, and that sender drops it with the share. */
#ifdef SL_MUTANT_BCAST_LAG_DOUBLE_RELEASE /* planted bug: a lag gives up a share of the message it moves to, which the read of it gives up again */
        if (e->scratch && release_share(e->b, next))
            e->b->drop(e->scratch, e->b->drop_ctx);
#endif
    }
    if (st != SL_EMPTY)
        atomic_store_explicit(&e->next, next, memory_order_relaxed); /* read by len */
    return st;
}

/* After an empty look at p. A subscriber handle that is a select case marks
 * the ring `selected` (once), so that sends ring the bell, and looks again.
 * Once the ring is closed and no sender is in flight, every send that saw
 * it open has landed: one last look, and if that finds nothing either, the
 * subscription has ended (ch->closed, which the façade then reports). */
static sl_status end_or_mark(sl_chan *ch, sl__bcast *b, uint64_t p, void *out)
{
    /* seq_cst: select registered (seq_cst) before the round that got here. */
    if (atomic_load_explicit(&ch->selectors, memory_order_seq_cst) != 0 &&
        !atomic_load_explicit(&b->selected, memory_order_relaxed)) {
        atomic_store_explicit(&b->selected, 1u, memory_order_seq_cst);
        /* The flag before the look below, against a sender's stamp and its
         * plain-fenced load of the flag (wake_subscribers): once per ring. */
        sl_event_heavy_fence();
        sl_status st = look(b, p, out);
        if (st != SL_EMPTY)
            return st;
    }
    /* seq_cst: `closed` before the marks, in the total order (as the
     * façade's sends_landed). */
    if (!atomic_load_explicit(&b->closed, memory_order_seq_cst) ||
        atomic_load_explicit(&b->in_flight, memory_order_seq_cst) != 0)
        return SL_EMPTY;
    sl_status st = look(b, p, out);
    if (st == SL_EMPTY) /* seq_cst, as sl_chan_close's own store */
        atomic_store_explicit(&ch->closed, 1u, memory_order_seq_cst);
    return st;
}

/* A subscription ended (closed subscriber handle, or ended by end_or_mark)
 * answers empty at once, and the façade then SL_CLOSED. */
static inline bool ended(const sl_chan *ch)
{
    /* Acquire: as the façade's is_closed. */
    return atomic_load_explicit(&ch->closed, memory_order_acquire) != 0;
}

/* With a drop function, after a receive of p whose bytes are at `copy`:
 * gives up the subscriber's share, and the last share drops p (from a copy
 * of its own: the receiver keeps `copy`, and p + cap's sender may be
 * writing the slot already). */
static void seen(sl__bcast_end *e, uint64_t p, const void *copy)
{
    sl__bcast *b = e->b;
    if (release_share(b, p)) {
        memcpy(e->scratch, copy, b->elem_size);
        b->drop(e->scratch, b->drop_ctx);
    }
}

sl_status sl__bcast_pop(sl_chan *ch, void *out)
{
    sl__bcast_end *e = &ch->q.bcast;
    if (!e->subscriber)
        return SL_EINVAL; /* the send handle has nothing to receive */
    if (ended(ch))
        return SL_EMPTY;
    uint64_t p = atomic_load_explicit(&e->next, memory_order_relaxed); /* our own */
    sl_status st = look(e->b, p, out);
    if (st == SL_EMPTY)
        st = end_or_mark(ch, e->b, p, out);
    if (st == SL_OK && e->scratch)
        seen(e, p, out);
    return advance(e, p, st);
}

size_t sl__bcast_pop_n(sl_chan *ch, void *out, size_t n)
{
    sl__bcast_end *e = &ch->q.bcast;
    if (!e->subscriber || ended(ch))
        return 0;
    uint64_t p = atomic_load_explicit(&e->next, memory_order_relaxed); /* our own */
    size_t k = 0;
    unsigned char *o = out;
    for (; k < n && look(e->b, p + k, o + k * e->b->elem_size) == SL_OK; k++)
        if (e->scratch)
            seen(e, p + k, o + k * e->b->elem_size);
    if (k)
        atomic_store_explicit(&e->next, p + k, memory_order_relaxed); /* read by len */
    return k;
}

size_t sl__bcast_len(const sl_chan *ch)
{
    const sl__bcast_end *e = &ch->q.bcast;
#ifndef SL_MUTANT_BCAST_LEN_AFTER_END /* planted bug: a closed subscriber counts what it can no longer read */
    /* An ended subscription holds nothing: its receives answer SL_CLOSED at
     * once, so the messages it did not read are no longer its to receive. */
    if (e->subscriber && ended(ch))
        return 0;
#endif
    /* Relaxed: a snapshot. */
    uint64_t t = atomic_load_explicit(&e->b->tail, memory_order_relaxed);
    uint64_t from = e->subscriber ? atomic_load_explicit(&e->next, memory_order_relaxed) : 0;
    uint64_t n = t > from ? t - from : 0;
    return n < e->b->cap ? (size_t)n : e->b->cap;
}

sl_event *sl__bcast_recv_event(sl_chan *ch) { return &ch->q.bcast.b->ready; }

SL_ATOMIC(uint32_t) *sl__bcast_recv_unwoken(sl_chan *ch) { return &ch->q.bcast.b->unwoken; }

void sl__bcast_closed(sl_chan *ch)
{
    sl__bcast *b = ch->q.bcast.b;
    if (!ch->q.bcast.subscriber)
        /* seq_cst: after the send handle's close (whose exchange every
         * sender's closed-check is ordered against), before the loads of
         * a subscriber that sees it (end_or_mark). */
        atomic_store_explicit(&b->closed, 1u, memory_order_seq_cst);
    wake_subscribers(b);
}

SL_API sl_status sl_chan_subscribe(sl_chan *bc, sl_chan **rx)
{
    if (!bc || !rx || bc->flavor != SL_BROADCAST || bc->q.bcast.subscriber)
        return SL_EINVAL;
    sl_chan_opts o = {.flavor = SL_BROADCAST, .elem_size = bc->elem_size,
                      .capacity = bc->capacity};
    attaching = bc->q.bcast.b;
    sl_status st = sl__chan_new_at(rx, &o, 0);
    attaching = NULL;
    return st;
}

SL_API uint64_t sl_chan_missed(const sl_chan *rx)
{
    if (!rx || rx->flavor != SL_BROADCAST || !rx->q.bcast.subscriber)
        return 0;
    /* Relaxed: a snapshot; exact on the receiving thread. */
    return atomic_load_explicit(&rx->q.bcast.missed, memory_order_relaxed);
}
