/*
 * channels/chan.c — the channel façade: sends, receives, batches, close and
 * ownership over the raw queues, reached through one adapter per flavour.
 *
 * The flavours are reached through the adapters and the table of
 * chan_flavors.h (one adapter per flavour, each marking its senders in
 * flight by a scheme of chan_marks.h, putting its raw queue in the façade's
 * terms and issuing the fences its queue's ordering leaves to it; the
 * dispatch). The façade's per-message paths here are written once against
 * an adapter.
 *
 * Every operation is a non-blocking attempt (sl__chan_send_once /
 * sl__chan_try_recv); the blocking and timed forms (channels/chan_wait.c,
 * apart because they only repeat these attempts and need the flavour
 * table on their way into a wait alone) repeat it through the await
 * protocol (internal/await.h): a bounded spin, then parking on an
 * eventcount — receivers on `not_empty`, senders on `not_full`. A successful send notifies
 * one receiver and a successful receive one sender, and both notifies cost
 * one load while nobody is parked.
 *
 * Close sets `closed` and wakes everyone. A send checks `closed` before it
 * pushes; a receive that finds the queue empty checks `closed` and then looks
 * once more, so every message whose send returned before the close is claimed
 * by a receiver (for SL_MPMC: at its fetch-and-add on the head) before any
 * receiver sees SL_CLOSED (chan_marks.h, "senders in flight", has the
 * argument; close issues no barrier). A send that races with close
 * may still return SL_OK: its message is then received, or dropped by
 * sl_chan_free if every receiver had already left — never lost.
 */
#include "chan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan_flavors.h"
#include "internal/await.h"
#include "internal/testing.h"
#include "internal/spin.h"
#include "internal/sysops.h"

sl_status sl__chan_new_at(sl_chan **out, const sl_chan_opts *opts, uint64_t start)
{
    if (!out || !opts || !flavor_supported(row_of(opts)))
        return SL_EINVAL;
    sl_chan *ch = sl__alloc(SL_CACHELINE, sizeof *ch);
    if (!ch)
        return SL_ENOMEM;
    memset(ch, 0, sizeof *ch);
    const flavor_adapter *a = adapter_of(row_of(opts));
    sl_status st = a->init(ch, opts, start);
    if (st != SL_OK) {
        free(ch);
        return st;
    }
    ch->flavor = row_of(opts);
    atomic_init(&ch->closed, 0u);
    atomic_init(&ch->selectors, 0u);
    atomic_init(&ch->drained, 0u);
    for (unsigned i = 0; i < SL_SEND_SLOTS; i++)
        atomic_init(&ch->in_flight[i].n, 0u);
    ch->elem_size = opts->elem_size;
    ch->capacity = a->unbounded ? SIZE_MAX : opts->capacity;
    ch->drop = opts->drop;
    ch->drop_ctx = opts->drop_ctx;
    sl_event_init(&ch->not_empty);
    sl_event_init(&ch->not_full);
    *out = ch;
    return SL_OK;
}

SL_API sl_status sl_chan_new(sl_chan **out, const sl_chan_opts *opts)
{
    /* A flavour with its own constructors (SL_TIMER) is not made from opts. */
    if (opts && flavor_supported(row_of(opts)) && adapter_of(row_of(opts))->own_ctor)
        return SL_EINVAL;
    return sl__chan_new_at(out, opts, 0);
}

/* A thread still parked in, selecting on, or sending into ch when it is
 * freed would touch freed memory later. These are cheap to see at free (free
 * is not a hot path), so every build reports them rather than corrupt memory. */
static void refuse_free_in_use(const sl_chan *ch)
{
    uint32_t parked = sl_event_waiters(&ch->not_empty) + sl_event_waiters(&ch->not_full);
    uint32_t selecting = atomic_load_explicit(&ch->selectors, memory_order_acquire);
    uint32_t sending = 0;
    for (size_t i = 0; i < SL_SEND_SLOTS; i++)
        sending += atomic_load_explicit(&ch->in_flight[i].n, memory_order_acquire);
    if (adapter_of(ch->flavor)->record_marks)
        sending += (uint32_t)sl__epoch_senders_on(ch);
    if (adapter_of(ch->flavor)->sending_elsewhere)
        sending += adapter_of(ch->flavor)->sending_elsewhere(ch);
    if (parked == 0 && selecting == 0 && sending == 0)
        return;
    fprintf(stderr,
            "sluice: sl_chan_free(%p) while threads still use it (%u waiting, "
            "%u selecting, %u sending); close it, let every thread return, "
            "then free it.\n",
            (const void *)ch, parked, selecting, sending);
    abort();
}

SL_API void sl_chan_free(sl_chan *ch)
{
    if (!ch)
        return;
    sl__chanfd_release(ch); /* before the check: a descriptor counts as a selector */
    /* A shared channel's counts include other processes' threads, which
     * this process cannot tell from its own: no check, and nothing to drain
     * (the segment, with its messages, outlives this process's view). */
    if (adapter_of(ch->flavor)->shared) {
        sl__shm_release(ch);
        return;
    }
    refuse_free_in_use(ch);
    /* The drop function sees each message in place, oldest first: no copy,
     * so nothing can fail half-way and leave a message undropped. */
    adapter_of(ch->flavor)->drain_destroy(ch, ch->drop, ch->drop_ctx);
    free(ch);
}

static inline bool is_closed(const sl_chan *ch)
{
    /* Acquire: pairs with close's store; messages sent before the close are
     * visible to the pop that follows. */
    return atomic_load_explicit(&ch->closed, memory_order_acquire) != 0;
}

/* After a send (receive cases may be ready) and after a receive (send
 * cases): one function each, with no argument, so that where gcc does not
 * inline them (the shared rows) the success path sets up nothing more than
 * the call. */
static inline void ring_receivers(sl_chan *ch) { sl__chan_ring_selectors(ch, SL__READY_RECV); }
static inline void ring_senders(sl_chan *ch) { sl__chan_ring_selectors(ch, SL__READY_SEND); }

/* ---- waking the channel's own sleepers ------------------------------------
 * Every notify of not_empty and not_full goes through chan_notify, with the
 * channel's count of unwoken sleepers when it is in process (internal/await.h:
 * a notify makes the system call only while a sleeper is left that no notify
 * has woken); every wait on them (await_wait, chan_wait.c) keeps the same
 * count. A broadcast ring's event, where its subscribers park, has a count
 * of its own, which its sends notify with (broadcast.c, wake_subscribers). */
SL_ATOMIC(uint32_t) *sl__chan_unwoken_of(sl_chan *ch, const sl_event *ev)
{
    if (ev == &ch->not_empty || ev == &ch->not_full)
        return sl__chan_is_shared(ch) ? NULL : &ch->unwoken[ev == &ch->not_full];
    /* A broadcast subscriber's ring event: the ring keeps its own count. */
#ifdef SL_MUTANT_BCAST_WAIT_UNCOUNTED
    return NULL; /* planted bug: a subscriber sleeps uncounted, so a send skips its wake */
#endif
    const flavor_adapter *a = adapter_of(ch->flavor);
    return a->recv_unwoken && ev == a->recv_event(ch) ? a->recv_unwoken(ch) : NULL;
}

static __attribute__((noinline)) void chan_notify_slow(sl_chan *ch, sl_event *ev, size_t n)
{
    sl__event_notify_counted(ev, sl__chan_unwoken_of(ch, ev), n);
}

/* notify_one (n 1), notify_n or notify_all (SL__NOTIFY_ALL) on ev, ch's
 * not_empty or not_full. The fast path is the public notify's: one seq_cst
 * load of `waiters`, the Dekker load after the caller's change. */
static inline void chan_notify(sl_chan *ch, sl_event *ev, size_t n)
{
    if (atomic_load_explicit(&ev->waiters, memory_order_seq_cst) != 0)
        chan_notify_slow(ch, ev, n);
}

/* channels/rings.h. The operation that gave the spare back rings receive
 * cases (a send) or nothing (a push that found the ring full at its cell, a
 * shared pop over 256 bytes that found it empty), so without this a selector
 * whose send case failed for want of that spare would sleep with room and a
 * spare free, in process with no periodic look to fall back on (unit_mpmc,
 * `starve`). */
void sl__chan_wake_starved(sl_event *not_full)
{
    sl_chan *ch = (sl_chan *)(void *)((char *)not_full - offsetof(sl_chan, not_full));
    chan_notify(ch, not_full, SL__NOTIFY_ALL);
    ring_senders(ch);
}

/* After the push: the unmark, and the wake-up a close makes it owe. */
PER_FLAVOR void send_end(const flavor_adapter *a, sl_chan *ch, SL_ATOMIC(uint32_t) *mark)
{
    a->unmark(mark);
    /* A receiver may be waiting for the last sender in flight to decide
     * SL_CLOSED: after a close, every unmark wakes them to look again, and
     * rings the selectors with a receive case, which wait on the select
     * bell for the same verdict (the close's own ring came while this mark
     * made their look say SL_EMPTY). The unmark is the state change, fenced
     * as a push's publish is before ring_receivers. */
    if (atomic_load_explicit(&ch->closed, memory_order_seq_cst)) {
        chan_notify(ch, &ch->not_empty, SL__NOTIFY_ALL);
#ifndef SL_MUTANT_CHAN_UNMARK_NO_BELL
        sl__chan_ring_selectors(ch, SL__READY_RECV);
#endif
    }
}

/* A shared channel's full send: the periodic look, which may find every
 * registered receiver gone (channels/shm_owner.c), then a send-end descriptor's
 * re-arm (chanfd.c). */
static __attribute__((noinline, cold)) sl_status shared_full(sl_chan *ch)
{
    sl__shm_on_full(ch);
    return sl__chanfd_full(ch);
}

/* sl__chan_send_once for one flavour's adapter. */
PER_FLAVOR sl_status send_with(const flavor_adapter *a, sl_chan *ch, const void *elem,
                               sl_visit_fn displaced, void *ctx)
{
    if (a->recv_only) /* a constant per flavour: folded away for the others */
        return SL_EINVAL;
    if (a->send) /* likewise */
        return a->send(ch, elem);
    SL_ATOMIC(uint32_t) *mark = a->mark(ch);
    if (a->shared && __builtin_expect(!mark, 0)) /* no record for it (sluice/shm.h) */
        return atomic_load_explicit(&ch->closed, memory_order_relaxed) ? SL_CLOSED : SL_ENOMEM;
    sl_status st = SL_CLOSED;
    SL_FI(); /* marked in flight, closed not yet checked */
    if (!atomic_load_explicit(&ch->closed, memory_order_seq_cst))
        st = a->push(ch, elem, displaced, ctx);
    SL_FI(); /* pushed, still marked */
    send_end(a, ch, mark);
    if (st != SL_OK && st != SL_EVICTED)
        /* A full shared channel's slow work is here, off the success path,
         * not in its push as the in-process rows' descriptor re-arm is:
         * there it cost the shared pair 16 to 19 instructions. */
        return a->shared && st == SL_FULL ? shared_full(ch) : st;
    chan_notify(ch, &ch->not_empty, 1);
    ring_receivers(ch);
    return st;
}

SHARED_DISPATCHER(sl_status, send_with,
                  (sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx), ch, elem,
                  displaced, ctx)

/* One non-blocking send: SL_OK, SL_EVICTED (the displaced message went to
 * `displaced`), SL_FULL, SL_ENOMEM or SL_CLOSED. Notifies one receiver and any
 * selector. Every send form goes through here. */
sl_status sl__chan_send_once(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    DISPATCH(ch->flavor, send_with, ch, elem, displaced, ctx);
}

/* Whether a select may answer a case refused on its flavour's look
 * (`looks_refused`: full for a send case, empty for a receive case) without
 * trying it: only while ch is open and has no descriptor for that end, which
 * a refused try re-arms (chanfd.c). The look's loads are seq_cst and
 * `closed` is read after them, so an open channel then was open at the look
 * too (closed never clears): the refusal linearizes at the look, as the
 * push's or pop's own test does (docs/guarantees.md, Select). */
static inline bool refused_on_look(sl_chan *ch, bool looks_refused, sl_chan_end end)
{
    if (!looks_refused)
        return false;
#ifdef SL_MUTANT_SELECT_LOOK_IGNORES_CLOSE
    return true; /* planted bug: full or empty outranks closed */
#endif
    if (atomic_load_explicit(&ch->closed, memory_order_seq_cst))
        return false;
#ifdef SL_MUTANT_SELECT_LOOK_SKIPS_DESCRIPTOR
    if (end == SL_END_RECV)
        return true; /* planted bug: a receive-end descriptor is not re-armed */
#endif
    return !sl__chanfd_has(ch, end);
}

/* A select's try of a send case: SL_FULL on the flavour's look at a full
 * queue (refused_on_look), without the in-flight mark and the rest of a
 * push (a refused try_send of SL_MPMC costs 157 instructions, this refusal
 * 50 with its call and dispatch); otherwise the try itself. */
PER_FLAVOR sl_status poll_send_with(const flavor_adapter *a, sl_chan *ch, const void *elem)
{
    if (refused_on_look(ch, a->looks_full && a->looks_full(ch), SL_END_SEND))
        return SL_FULL;
    return send_with(a, ch, elem, ch->drop, ch->drop_ctx);
}

SHARED_DISPATCHER(sl_status, poll_send_with, (sl_chan *ch, const void *elem), ch, elem)

sl_status sl__chan_poll_send(sl_chan *ch, const void *elem)
{
    DISPATCH(ch->flavor, poll_send_with, ch, elem);
}

/* What a pop that made `room` owes the senders: a wake on not_full and a
 * ring for the selectors and descriptors with a send case. Nothing where no
 * send ever finds the queue full: an unbounded queue (a send refused for
 * memory is final), an evicting one (a send into a full ring displaces) or
 * a broadcast subscriber (`lags`: the send handle overwrites what a
 * subscriber has not read, and a subscriber refuses sends). There no
 * sender waits for room, a select's send case is ready at once,
 * and a send-end descriptor is never re-armed, for no send says SL_FULL:
 * the notify would only load the control line, and while anything selects
 * on or watches the channel, ring the process's send bells, waking any
 * selector that waits to send elsewhere, for nothing. Nothing for a
 * receive-only channel (a timer) either: no send waits on it, and a ring
 * would wake the selectors waiting to send elsewhere for nothing. */
PER_FLAVOR void room_made(const flavor_adapter *a, sl_chan *ch, size_t room)
{
    if (a->unbounded || a->evicts || a->lags || a->recv_only)
        return;
    chan_notify(ch, &ch->not_full, room);
    ring_senders(ch);
}

/* One pop, and the notifies it owes. */
PER_FLAVOR sl_status pop_with(const flavor_adapter *a, sl_chan *ch, void *out)
{
    sl_status st = a->pop(ch, out);
    if (st == SL_OK)
        room_made(a, ch, 1);
    return st;
}

/* Whether every send that saw ch open has landed, for a receiver that found
 * the queue empty: ch is closed and no sender is marked in flight. The loads
 * of `closed` and of the marks are seq_cst and in this order, and a flavour
 * whose mark is a plain store gets the heavy barrier between them
 * (chan_marks.h, "senders in flight"): the close itself issues none. */
PER_FLAVOR bool sends_landed(const flavor_adapter *a, sl_chan *ch)
{
    /* seq_cst: the close's exchange before the marks' loads, in the total order. */
    if (!atomic_load_explicit(&ch->closed, memory_order_seq_cst))
        return false;
    if (a->shared) /* marks in sender records: a dead process's do not count */
        return !sl__shm_senders_in_flight(ch);
    if (a->light_mark)
        sl_event_heavy_fence(); /* `closed` read, before the flag's load */
#ifdef SL_MUTANT_CHAN_RECORD_MARKS_UNREAD
    return !senders_in_flight(ch); /* planted bug: the records' marks go unread */
#endif
    return !senders_in_flight(ch) && !(a->record_marks && sl__epoch_senders_on(ch));
}

/* For a receiver whose look found the queue empty (every receive form asks
 * here): SL_EMPTY while ch is open or a send that saw it open may still be
 * landing; SL_CLOSED once "closed and drained" is known; SL_OK when every
 * such send has landed and is visible: look once more, and if that look is
 * empty too, set_drained. */
PER_FLAVOR sl_status empty_verdict(const flavor_adapter *a, sl_chan *ch)
{
    SL_FI();
    if (!is_closed(ch))
        return SL_EMPTY;
    /* Once established, "closed and drained" is final: a sender that starts
     * after it sees `closed` and refuses (its brief in-flight mark must not
     * turn a later answer back into SL_EMPTY). */
    if (atomic_load_explicit(&ch->drained, memory_order_acquire))
        return SL_CLOSED;
    /* Closed, but a send that saw it open may still be landing: until no
     * sender is marked, the answer is "not yet" (its unmark wakes us). */
    return sends_landed(a, ch) ? SL_OK : SL_EMPTY;
}

static sl_status set_drained(sl_chan *ch)
{
    atomic_store_explicit(&ch->drained, 1u, memory_order_release);
    return SL_CLOSED;
}

/* sl__chan_try_recv for one flavour's adapter. */
PER_FLAVOR sl_status recv_with(const flavor_adapter *a, sl_chan *ch, void *out)
{
    sl_status st = pop_with(a, ch, out);
    if (st == SL_OK)
        return SL_OK;
    if (a->lags && st != SL_EMPTY) /* SL_LAGGED: as it is */
        return st;
    sl_status v = empty_verdict(a, ch);
    if (v != SL_OK) /* empty: re-arm an event-loop descriptor, look again (chanfd.c) */
        return v == SL_EMPTY && sl__chanfd_has(ch, SL_END_RECV) ? sl__chanfd_rearm_recv(ch, out)
                                                                 : v;
    /* Every such send has landed and is visible now: one last look. */
#ifdef SL_MUTANT_CHAN_NO_LAST_LOOK
    return set_drained(ch); /* planted bug: a message that landed meanwhile is left behind */
#endif
    st = pop_with(a, ch, out);
    if (st == SL_OK)
        return SL_OK;
    return a->lags && st != SL_EMPTY ? st : set_drained(ch);
}

SHARED_DISPATCHER(sl_status, recv_with, (sl_chan *ch, void *out), ch, out)

/* One non-blocking receive: SL_OK, SL_EMPTY, SL_CLOSED once drained, or
 * SL_LAGGED (a broadcast subscriber that fell behind), or SL_EINVAL (a
 * broadcast send handle). */
sl_status sl__chan_try_recv(sl_chan *ch, void *out)
{
    DISPATCH(ch->flavor, recv_with, ch, out);
}

/* A select's try of a receive case: SL_EMPTY on the flavour's look at an
 * empty queue (refused_on_look), the answer recv_with gives after its pop's
 * own empty test and the same closed load; otherwise the try itself. */
PER_FLAVOR sl_status poll_recv_with(const flavor_adapter *a, sl_chan *ch, void *out)
{
    if (refused_on_look(ch, a->looks_empty && a->looks_empty(ch), SL_END_RECV))
        return SL_EMPTY;
    return recv_with(a, ch, out);
}

SHARED_DISPATCHER(sl_status, poll_recv_with, (sl_chan *ch, void *out), ch, out)

sl_status sl__chan_poll_recv(sl_chan *ch, void *out)
{
    DISPATCH(ch->flavor, poll_recv_with, ch, out);
}

/* ---- what the other files ask of a channel's flavour -------------------- */

bool sl__chan_changes_notify(const sl_chan *ch)
{
    /* A shared channel's changes in other processes ring its segment's
     * bell, which this process's watcher follows (shm_watch.c). Not a
     * rendezvous channel (its own wait): an end
     * of one is ready only while a partner is blocked in it, and an event
     * loop never blocks in a channel, so two loops at its two ends would
     * never meet. */
    const flavor_adapter *a = adapter_of(ch->flavor);
    return (a->ready_at == queue_ready_at || a->shared) && !a->await;
}

bool sl__chan_is_shared(const sl_chan *ch) { return adapter_of(ch->flavor)->shared; }

const flavor_adapter *sl__chan_adapter(sl_flavor f) { return adapter_of(f); }

uint64_t sl__chan_ready_at(const sl_chan *ch)
{
#ifdef SL_MUTANT_TIMER_BLIND_WAIT
    return SL_FOREVER; /* planted bug: waits do not wake at a timer's fire */
#endif
    return adapter_of(ch->flavor)->ready_at(ch);
}

/* ---- the public non-blocking forms (the blocking ones: chan_wait.c) ------- */

SL_API sl_status sl_chan_try_send(sl_chan *ch, const void *elem)
{
    if (!ch || !elem)
        return SL_EINVAL;
    return sl__chan_try_send_once(ch, elem);
}

static void copy_displaced(void *elem, void *ctx)
{
    void **c = ctx;
    memcpy(c[1], elem, ((sl_chan *)c[0])->elem_size);
}

SL_API sl_status sl_chan_send_evict(sl_chan *ch, const void *elem, void *evicted)
{
    if (!ch || !elem || !evicted || !adapter_of(ch->flavor)->evicts)
        return SL_EINVAL;
    void *ctx[2] = {ch, evicted};
    return sl__chan_send_once(ch, elem, copy_displaced, ctx);
}

SL_API sl_status sl_chan_try_recv(sl_chan *ch, void *out)
{
    if (!ch || !out)
        return SL_EINVAL;
    return sl__chan_try_recv(ch, out);
}

/* sl_chan_try_send_n for one flavour's adapter. */
PER_FLAVOR size_t send_n_with(const flavor_adapter *a, sl_chan *ch, const void *elems, size_t n)
{
    if (a->recv_only)
        return 0;
    SL_ATOMIC(uint32_t) *mark = a->mark(ch);
    if (a->shared && __builtin_expect(!mark, 0))
        return 0; /* no record for it: every one is held (sluice/shm.h) */
    size_t sent = 0;
    SL_FI(); /* marked in flight, closed not yet checked (as send_with) */
    bool open = !atomic_load_explicit(&ch->closed, memory_order_seq_cst);
    if (open)
        sent = a->push_n(ch, elems, n);
#ifdef SL_MUTANT_CHAN_SEND_N_AFTER_CLOSE
    else
        sent = a->push_n(ch, elems, n); /* planted bug: a closed channel takes a batch */
#endif
    send_end(a, ch, mark);
#ifdef SL_MUTANT_SHM_BATCH_NO_LOOK
    open = false; /* planted bug: a full batch send makes no look */
#endif
    if (a->shared && open && sent < n)
        /* Full: the look for a gone receiver, as a full single send's
         * (shared_full), without its descriptor re-arm, which the batch
         * forms never make (sluice/chanfd.h). Found by review: a loop
         * polling with batches never learnt of the death. */
        sl__shm_on_full(ch);
    if (sent) {
        chan_notify(ch, &ch->not_empty, sent);
        ring_receivers(ch);
    }
    return sent;
}

SHARED_DISPATCHER(size_t, send_n_with, (sl_chan *ch, const void *elems, size_t n), ch, elems,
                  n)

SL_API size_t sl_chan_try_send_n(sl_chan *ch, const void *elems, size_t n)
{
    if (!ch || !elems || !sl__chan_batch_fits(ch, n))
        return 0;
    DISPATCH(ch->flavor, send_n_with, ch, elems, n);
}

/* One batch pop, and the notifies it owes. */
PER_FLAVOR size_t pop_n_with(const flavor_adapter *a, sl_chan *ch, void *out, size_t n)
{
    size_t got = a->pop_n(ch, out, n);
    if (got)
        room_made(a, ch, got);
    return got;
}

/* One non-blocking batch receive for one flavour's adapter: up to n messages
 * into out, how many in *got; SL_OK (*got >= 1), SL_EMPTY, or SL_CLOSED once
 * drained — recv_with's verdict, for a batch (and, where the adapter lags,
 * SL_LAGGED or SL_EINVAL with *got 0). */
PER_FLAVOR sl_status recv_n_with(const flavor_adapter *a, sl_chan *ch, void *out, size_t n,
                                 size_t *got)
{
    size_t k = pop_n_with(a, ch, out, n);
    if (a->lags && k == 0) { /* a batch stops before a lag: one pop reports it */
        sl_status st = pop_with(a, ch, out);
        if (st != SL_EMPTY) {
            *got = st == SL_OK;
            return st;
        }
    }
    sl_status v = k < n ? empty_verdict(a, ch) : SL_EMPTY;
    /* As recv_with: once closed and no sender in flight, every send has
     * landed; look again. */
#ifndef SL_MUTANT_RECV_N_NO_LAST_LOOK /* planted bug: a batch leaves what landed meanwhile */
    if (v == SL_OK)
        k += pop_n_with(a, ch, (unsigned char *)out + k * ch->elem_size, n - k);
#endif
    *got = k;
    if (k)
        return SL_OK;
    return v == SL_OK ? set_drained(ch) : v;
}

SHARED_DISPATCHER(sl_status, recv_n_with, (sl_chan *ch, void *out, size_t n, size_t *got), ch,
                  out, n, got)

sl_status sl__chan_try_recv_n(sl_chan *ch, void *out, size_t n, size_t *got)
{
    DISPATCH(ch->flavor, recv_n_with, ch, out, n, got);
}

SL_API size_t sl_chan_try_recv_n(sl_chan *ch, void *out, size_t n)
{
    size_t got = 0;
    if (ch && out && sl__chan_batch_fits(ch, n))
        (void)sl__chan_try_recv_n(ch, out, n, &got);
    return got;
}

SL_API void sl_chan_close(sl_chan *ch)
{
    if (!ch)
        return;
    /* seq_cst: the flag is the condition both eventcounts' waiters re-check,
     * and the point every sender's closed-check is ordered against (no
     * barrier here: the receiver deciding SL_CLOSED issues the one a plain
     * in-flight flag needs, chan_marks.h). */
    if (atomic_exchange_explicit(&ch->closed, 1u, memory_order_seq_cst) == 0) {
        SL_FI(); /* closed, nobody woken yet */
        chan_notify(ch, &ch->not_empty, SL__NOTIFY_ALL);
        chan_notify(ch, &ch->not_full, SL__NOTIFY_ALL);
        sl__chan_ring_selectors(ch, SL__READY_BOTH);
        const flavor_adapter *a = adapter_of(ch->flavor);
        if (a->on_close) /* waiters elsewhere (a broadcast's subscribers, rendezvous offers) */
            a->on_close(ch);
    }
}

SL_API bool sl_chan_is_closed(const sl_chan *ch) { return ch && is_closed(ch); }

SL_API size_t sl_chan_len(const sl_chan *ch)
{
    if (!ch)
        return 0;
    return adapter_of(ch->flavor)->len(ch);
}

SL_API size_t sl_chan_cap(const sl_chan *ch) { return ch ? ch->capacity : 0; }

/* A shared channel's handle records SL__SPSC_SHARED or SL__MPMC_SHARED, and
 * a rendezvous channel's SL__RENDEZVOUS: the flavour is the public one its
 * row reports. */
SL_API sl_flavor sl_chan_flavor(const sl_chan *ch)
{
    if (!ch)
        return (sl_flavor)0;
    const flavor_adapter *a = adapter_of(ch->flavor);
    return a->reports ? a->reports : ch->flavor;
}

SL_API size_t sl_chan_elem_size(const sl_chan *ch) { return ch ? ch->elem_size : 0; }
