/*
 * channels/chan_marks.h — senders in flight (internal): the schemes by which
 * a sender marks itself before its closed-check and unmarks after its push,
 * the fences that order them, and the receiver's look at the marks.
 *
 * Apart from channels/chan_flavors.h because the marks are one argument
 * (the close's, below) that every adapter picks from, not a flavour; the
 * table's file includes this one where the section stood, and nothing else
 * does. Static definitions (a thread's send slot, the anonymous mark), so
 * included once, by channels/chan.c through chan_flavors.h: the adapters
 * must be visible where the per-message paths are compiled, and with them
 * the marks they inline.
 */
#ifndef SLUICE_CHANNELS_CHAN_MARKS_H
#define SLUICE_CHANNELS_CHAN_MARKS_H

#include "chan_impl.h"
#include "internal/epoch.h"
#include "internal/sysops.h"

/* ---- senders in flight ---------------------------------------------------
 * A sender marks itself before it checks `closed` and unmarks after its push.
 * The closer only sets `closed` (a seq_cst exchange) and wakes everyone: it
 * issues no barrier, so close is wait-free apart from its wakes. A receiver
 * that finds the queue empty and `closed` set reports SL_CLOSED only when no
 * sender is marked, and it reads the marks after it read `closed` (both
 * seq_cst). Either a sender's check saw `closed` (it refuses), or its mark
 * comes before that check, which comes before the close, which comes before
 * the receiver's loads: the receiver sees the mark, or the unmark that
 * followed the push. For the counted marks (seq_cst read-modify-writes) that
 * is the single total order of seq_cst operations; for the flag, a plain
 * store followed by sl_event_fence(), the receiver issues the heavy barrier
 * between its load of `closed` and its load of the flag (the Dekker pair of
 * sluice/park.h, asymmetric where membarrier is available: see recv_with).
 *
 * How a sender marks itself is its flavour's choice (the adapter's mark and
 * unmark): one of the three schemes below, or, for a shared SL_MPMC
 * channel, a flag per sending thread in the segment (a lane, shm_lane.c),
 * which is the flag's scheme with the shared channels' fence. */

/* The fence between a plain store and the load that must not pass it (a
 * notify's waiter count, a sender's closed-check). Within one process,
 * sl_event_fence: a compiler barrier where the other side's heavy barrier is
 * membarrier(2). `across`: the other side may be in another process, which
 * that private membarrier does not reach: the shared channels' own mode
 * (sl__shm_fence; docs/guarantees.md, "Across processes"). A constant per
 * adapter. */
static inline __attribute__((always_inline)) void store_load_fence(bool across)
{
    if (across)
        sl__shm_fence();
    else
        sl_event_fence();
}

/* One sender at a time (SL_SPSC): a plain flag (slot 0; a shared channel's
 * sender record), each store followed by the fence above — no
 * read-modify-write on the path. */
static inline __attribute__((always_inline)) SL_ATOMIC(uint32_t) *
flag_mark_as(SL_ATOMIC(uint32_t) *flag, bool across)
{
    /* Relaxed: only this sender writes the flag; the fence orders it. */
    atomic_store_explicit(flag, 1u, memory_order_relaxed);
    store_load_fence(across); /* the mark before the closed-check */
    return flag;
}

static inline __attribute__((always_inline)) void flag_unmark_as(SL_ATOMIC(uint32_t) *flag,
                                                                 bool across)
{
    /* Release: the push is visible to whoever sees the flag down. */
    atomic_store_explicit(flag, 0u, memory_order_release);
    /* The unmark before the closed load that follows, and with it the push's
     * release store before the notify's waiter load. */
    store_load_fence(across);
}

static inline SL_ATOMIC(uint32_t) *flag_mark(sl_chan *ch)
{
    return flag_mark_as(&ch->in_flight[0].n, false);
}
static inline void flag_unmark(SL_ATOMIC(uint32_t) *flag) { flag_unmark_as(flag, false); }
static inline void flag_unmark_across(SL_ATOMIC(uint32_t) *flag) { flag_unmark_as(flag, true); }

/* Any number of senders: a count in a slot picked once per thread, a line
 * per slot so that senders on different threads do not share one. */
static _Thread_local unsigned send_slot_of_thread
    __attribute__((tls_model("initial-exec"))) = UINT32_MAX;
static SL_ATOMIC(unsigned) send_slot_next;

static inline SL_ATOMIC(uint32_t) *count_mark(sl_chan *ch)
{
    if (send_slot_of_thread == UINT32_MAX)
        /* Relaxed: any spread of the threads over the slots will do. */
        send_slot_of_thread = atomic_fetch_add_explicit(&send_slot_next, 1u,
                                                        memory_order_relaxed) % SL_SEND_SLOTS;
    SL_ATOMIC(uint32_t) *n = &ch->in_flight[send_slot_of_thread].n;
    /* seq_cst: the mark before the closed-check, in the total order. */
    atomic_fetch_add_explicit(n, 1u, memory_order_seq_cst);
    return n;
}

static inline void count_unmark(SL_ATOMIC(uint32_t) *n)
{
    /* seq_cst: the unmark (after the push) before the closed load that follows. */
    atomic_fetch_sub_explicit(n, 1u, memory_order_seq_cst);
}

/* Any number of senders, and no user code between mark and unmark (SL_LIST,
 * SL_MPMC): the mark is two fields of the calling thread's epoch record
 * (internal/epoch.h: `sending`, `sending_on`), in a line only that thread
 * writes, so no read-modify-write. A receiver deciding SL_CLOSED issues the
 * heavy barrier and walks the records (light_mark, record_marks). The mark
 * is ordered before the closed-check in one of two ways:
 *   - `enter` (SL_LIST): the list's push announces itself in the same
 *     record, its store followed by the fast side of the asymmetric barrier
 *     (sl__epoch_refresh: sl_event_fence's); the mark's stores go just
 *     before it, and the push runs inside the epoch section it opened
 *     (list_push), which the unmark leaves;
 *   - otherwise (SL_MPMC): sl_event_fence(), as SL_SPSC's flag.
 * The unmark is a release store and sl_event_fence(), as the flag's. A
 * thread with no record (its allocation failed) counts itself in the
 * channel's slots instead. Two locked read-modify-writes fewer a send than
 * the count. SL_RING keeps the count: its push may call the drop function,
 * user code that may send and would overwrite the thread's one mark. */
static SL_ATOMIC(uint32_t) *record_mark_first(sl_chan *ch, bool enter);

static inline __attribute__((always_inline)) SL_ATOMIC(uint32_t) *
record_mark_in(sl_chan *ch, sl_epoch_rec *r, bool enter)
{
    /* Release: a receiver that reads this channel here reads the unmark of
     * the thread's previous send before it (sl__epoch_senders_on). */
    atomic_store_explicit(&r->sending_on, (const void *)ch, memory_order_release);
    /* Release too: a receiver whose acquire load reads this 1 then reads
     * this channel, not the one of the thread's previous send. Relaxed, the
     * 1 may be seen before the channel (C11 allows it, a weakly ordered CPU
     * shows it): a receiver of that previous channel, closed, counts a send
     * that is not its own, answers SL_EMPTY and sleeps, and the unmark that
     * follows notifies this channel, not that one: it sleeps for good. */
    atomic_store_explicit(&r->sending, 1u, memory_order_release);
    if (enter)
        sl__epoch_refresh(r); /* its fence: the mark before the closed-check */
    else
        sl_event_fence(); /* the mark before the closed-check (heavy on the receiver) */
    return &r->sending;
}

static inline __attribute__((always_inline)) SL_ATOMIC(uint32_t) *
record_mark_as(sl_chan *ch, bool enter)
{
    sl_epoch_rec *r = sl__epoch_self;
    if (__builtin_expect(r == NULL, 0))
        return record_mark_first(ch, enter);
    return record_mark_in(ch, r, enter);
}

/* The count an anonymous sender (no record) marked, until its unmark. */
static _Thread_local SL_ATOMIC(uint32_t) *anonymous_mark
    __attribute__((tls_model("initial-exec")));

/* A thread's first send: its record, or the anonymous count (with `enter`,
 * sl__epoch_enter_slow has then counted the thread as an anonymous reader).
 * Out of line, as the anonymous unmark, so that the send path inlined for
 * every flavour keeps its registers. */
static __attribute__((noinline, cold)) SL_ATOMIC(uint32_t) *record_mark_first(sl_chan *ch,
                                                                               bool enter)
{
    sl_epoch_rec *r = enter ? sl__epoch_enter_slow() : sl__epoch_record();
    if (r)
        return record_mark_in(ch, r, enter);
    return anonymous_mark = count_mark(ch);
}

static __attribute__((noinline, cold)) void record_unmark_anonymous(bool exit)
{
    count_unmark(anonymous_mark);
    if (exit)
        sl__epoch_exit_anonymous();
}

/* The mark is found again from the thread's record (or anonymous_mark), not
 * from the argument: so the caller need not keep it in a register across
 * the push, a register every flavour's inlined send path would pay for. */
static inline __attribute__((always_inline)) void record_unmark_as(bool exit)
{
    sl_epoch_rec *r = sl__epoch_self;
    if (__builtin_expect(r == NULL, 0)) {
        record_unmark_anonymous(exit);
        return;
    }
    /* Release: the push is visible to whoever sees the mark down. */
    atomic_store_explicit(&r->sending, 0u, memory_order_release);
    if (exit)
        sl__epoch_exit(r);
    sl_event_fence(); /* the unmark before the closed load that follows */
}

static inline SL_ATOMIC(uint32_t) *epoch_mark(sl_chan *ch) { return record_mark_as(ch, true); }
static inline void epoch_unmark(SL_ATOMIC(uint32_t) *mark)
{
    (void)mark;
    record_unmark_as(true);
}
static inline SL_ATOMIC(uint32_t) *record_mark(sl_chan *ch) { return record_mark_as(ch, false); }
static inline void record_unmark(SL_ATOMIC(uint32_t) *mark)
{
    (void)mark;
    record_unmark_as(false);
}

/* Whether any sender is marked. Every slot, whatever the scheme: a flag's
 * unused slots stay 0, and only a receiver deciding SL_CLOSED asks. */
static bool senders_in_flight(const sl_chan *ch)
{
    for (unsigned i = 0; i < SL_SEND_SLOTS; i++)
        /* seq_cst: after the caller's seq_cst load of `closed` in the total
         * order (the argument above); and, as an acquire, pairs with the
         * unmark's release, so a push that landed before the unmark is
         * visible to the final look. */
        if (atomic_load_explicit(&ch->in_flight[i].n, memory_order_seq_cst) != 0)
            return true;
    return false;
}

#endif /* SLUICE_CHANNELS_CHAN_MARKS_H */
