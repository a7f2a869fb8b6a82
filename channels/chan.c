/*
 * channels/chan.c — the channel façade: close, blocking, timeouts, batches and
 * ownership over the raw flavours.
 *
 * Every operation is a non-blocking attempt on the flavour (try_send_once /
 * try_recv_once) plus, for the blocking forms, the three phases of parking:
 * bounded spinning with back-off, a few yields, then the eventcount. Receivers
 * park on `not_empty`, senders on `not_full`; a successful send notifies one
 * receiver and a successful receive one sender, and both notifies cost one
 * load while nobody is parked.
 *
 * Close sets `closed` and wakes everyone. A send checks `closed` before it
 * pushes; a receive that finds the queue empty checks `closed` and then looks
 * once more, so every message whose send returned before the close is claimed
 * by a receiver (for SL_MPMC: at its fetch-and-add on the head) before any
 * receiver sees SL_CLOSED. A send that races with close
 * may still return SL_OK: its message is then received, or dropped by
 * sl_chan_free if every receiver had already left — never lost.
 */
#include "chan_impl.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rings.h"
#include "internal/spin.h"
#include "internal/testing.h"

typedef sl_status (*chan_op)(sl_chan *ch, void *buf);

static bool flavor_supported(sl_flavor f)
{
    return f == SL_SPSC || f == SL_MPMC || f == SL_LIST || f == SL_RING;
}

/* ---- the flavours' raw operations, one switch each ---------------------- */

static sl_status raw_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    switch (o->flavor) {
    case SL_SPSC: return sl__spsc_init_at(&ch->q.spsc, o->elem_size, o->capacity, start);
    case SL_MPMC: return sl__mpmc_init_at(&ch->q.mpmc, o->elem_size, o->capacity, start);
    case SL_LIST: return sl_list_init(&ch->q.list, o->elem_size);
    case SL_RING: return sl_ring_init(&ch->q.ring, o->elem_size, o->capacity);
    default: return SL_EINVAL;
    }
}

/* Hands what is left to fn (if any) in place, oldest first, then frees. */
static void raw_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx)
{
    switch (ch->flavor) {
    case SL_SPSC:
        if (fn)
            sl__spsc_drain(&ch->q.spsc, fn, ctx);
        sl_spsc_destroy(&ch->q.spsc);
        break;
    case SL_MPMC:
        if (fn)
            sl__mpmc_drain(&ch->q.mpmc, fn, ctx);
        sl_mpmc_destroy(&ch->q.mpmc);
        break;
    case SL_LIST:
        sl__list_drain(&ch->q.list, fn, ctx);
        sl_list_destroy(&ch->q.list);
        break;
    case SL_RING:
        sl__ring_drain(&ch->q.ring, fn, ctx);
        sl_ring_destroy(&ch->q.ring);
        break;
    default: break;
    }
}

/* One push: SL_OK, SL_EVICTED (SL_RING: the displaced message went to
 * `displaced`), SL_FULL or SL_ENOMEM. Callers run it between send_begin and
 * send_end: SPSC publishes with a release store, and send_end's
 * sl_event_fence orders that store before the notify's waiter load (the
 * others publish with a seq_cst RMW). */
static inline sl_status raw_push(sl_chan *ch, const void *elem, sl_visit_fn displaced,
                                 void *ctx)
{
    switch (ch->flavor) {
    case SL_SPSC: return sl_spsc_try_push(&ch->q.spsc, elem) == SL_OK ? SL_OK : SL_FULL;
    case SL_MPMC: return sl_mpmc_try_push(&ch->q.mpmc, elem);
    case SL_RING: return sl__ring_push_visit(&ch->q.ring, elem, displaced, ctx);
    default: return sl_list_try_push(&ch->q.list, elem);
    }
}

/* One pop: SL_OK or SL_EMPTY, ordered like raw_push. */
static inline sl_status raw_pop(sl_chan *ch, void *out)
{
    switch (ch->flavor) {
    case SL_SPSC:
        if (sl_spsc_try_pop(&ch->q.spsc, out) != SL_OK)
            return SL_EMPTY;
        sl_event_fence(); /* head store before waiter load (asymmetric: see park.h) */
        return SL_OK;
    case SL_MPMC: return sl_mpmc_try_pop(&ch->q.mpmc, out);
    case SL_RING: return sl_ring_try_pop(&ch->q.ring, out);
    default: return sl_list_try_pop(&ch->q.list, out);
    }
}

/* Every send into a ring succeeds: evicting ones count as sent. */
static size_t ring_push_n(sl_chan *ch, const void *elems, size_t n)
{
    const unsigned char *p = elems;
    for (size_t i = 0; i < n; i++)
        sl__ring_push_visit(&ch->q.ring, p + i * ch->elem_size, ch->drop, ch->drop_ctx);
    return n;
}

static size_t raw_push_n(sl_chan *ch, const void *elems, size_t n)
{
    switch (ch->flavor) {
    case SL_SPSC: return sl_spsc_push_n(&ch->q.spsc, elems, n); /* fenced by send_end */
    case SL_MPMC: return sl_mpmc_push_n(&ch->q.mpmc, elems, n);
    case SL_RING: return ring_push_n(ch, elems, n);
    default: return sl_list_push_n(&ch->q.list, elems, n);
    }
}

static size_t raw_pop_n(sl_chan *ch, void *out, size_t n)
{
    size_t k;
    switch (ch->flavor) {
    case SL_SPSC:
        k = sl_spsc_pop_n(&ch->q.spsc, out, n);
        sl_event_fence(); /* head store before waiter load (asymmetric: see park.h) */
        return k;
    case SL_MPMC: return sl_mpmc_pop_n(&ch->q.mpmc, out, n);
    case SL_RING: return sl_ring_pop_n(&ch->q.ring, out, n);
    default: return sl_list_pop_n(&ch->q.list, out, n);
    }
}

static size_t raw_len(const sl_chan *ch)
{
    switch (ch->flavor) {
    case SL_SPSC: return sl_spsc_len(&ch->q.spsc);
    case SL_MPMC: return sl_mpmc_len(&ch->q.mpmc);
    case SL_RING: return sl_ring_len(&ch->q.ring);
    default: return sl_list_len(&ch->q.list);
    }
}

sl_status sl__chan_new_at(sl_chan **out, const sl_chan_opts *opts, uint64_t start)
{
    if (!out || !opts || !flavor_supported(opts->flavor))
        return SL_EINVAL;
    sl_chan *ch = aligned_alloc(SL_CACHELINE, sl__round_to_line(sizeof *ch));
    if (!ch)
        return SL_ENOMEM;
    memset(ch, 0, sizeof *ch);
    sl_status st = raw_init(ch, opts, start);
    if (st != SL_OK) {
        free(ch);
        return st;
    }
    ch->flavor = opts->flavor;
    atomic_init(&ch->closed, 0u);
    atomic_init(&ch->selectors, 0u);
    atomic_init(&ch->close_done, 0u);
    atomic_init(&ch->drained, 0u);
    for (unsigned i = 0; i < SL_SEND_SLOTS; i++)
        atomic_init(&ch->in_flight[i].n, 0u);
    ch->elem_size = opts->elem_size;
    ch->capacity = opts->flavor == SL_LIST ? SIZE_MAX : opts->capacity;
    ch->drop = opts->drop;
    ch->drop_ctx = opts->drop_ctx;
    sl_event_init(&ch->not_empty);
    sl_event_init(&ch->not_full);
    *out = ch;
    return SL_OK;
}

SL_API sl_status sl_chan_new(sl_chan **out, const sl_chan_opts *opts)
{
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
    refuse_free_in_use(ch);
    /* The drop function sees each message in place, oldest first: no copy,
     * so nothing can fail half-way and leave a message undropped. */
    raw_drain_destroy(ch, ch->drop, ch->drop_ctx);
    free(ch);
}

static inline bool is_closed(const sl_chan *ch)
{
    /* Acquire: pairs with close's store; messages sent before the close are
     * visible to the pop that follows. */
    return atomic_load_explicit(&ch->closed, memory_order_acquire) != 0;
}

sl_event sl__select_bell;

/* A selecting thread may wait for this channel: ring the bell. The caller's
 * state change was a seq_cst RMW or fenced (the Dekker pair with sl_select's
 * registration), so this seq_cst load cannot miss a registered selector. */
static inline void ring_selectors(sl_chan *ch)
{
    if (atomic_load_explicit(&ch->selectors, memory_order_seq_cst) != 0)
        sl_event_notify_all(&sl__select_bell);
}

/* ---- senders in flight ---------------------------------------------------
 * A sender marks itself before it checks `closed` and unmarks after its push.
 * The closer sets `closed`, issues the heavy barrier, then sets `close_done`.
 * Either a sender's check saw `closed` (it refuses), or its mark is visible to
 * anyone who saw `close_done` (the Dekker pair of sluice/park.h, asymmetric
 * where membarrier is available). Receivers report SL_CLOSED only after
 * `close_done` with no sender marked: every send that saw the channel open
 * has landed by then. */

static _Thread_local unsigned send_slot_of_thread = UINT32_MAX;
static SL_ATOMIC(unsigned) send_slot_next;

static inline SL_ATOMIC(uint32_t) *send_begin(sl_chan *ch)
{
    if (ch->flavor == SL_SPSC) {
        SL_ATOMIC(uint32_t) *flag = &ch->in_flight[0].n;
        atomic_store_explicit(flag, 1u, memory_order_relaxed);
        sl_event_fence(); /* the mark before the closed-check */
        return flag;
    }
    if (send_slot_of_thread == UINT32_MAX)
        send_slot_of_thread = atomic_fetch_add_explicit(&send_slot_next, 1u,
                                                        memory_order_relaxed) % SL_SEND_SLOTS;
    SL_ATOMIC(uint32_t) *n = &ch->in_flight[send_slot_of_thread].n;
    /* seq_cst: the mark before the closed-check, in the total order. */
    atomic_fetch_add_explicit(n, 1u, memory_order_seq_cst);
    return n;
}

static inline void send_end(sl_chan *ch, SL_ATOMIC(uint32_t) *mark)
{
    if (ch->flavor == SL_SPSC) {
        /* Release: the push is visible to whoever sees the flag down. */
        atomic_store_explicit(mark, 0u, memory_order_release);
        sl_event_fence(); /* the unmark before the closed load below */
    } else {
        atomic_fetch_sub_explicit(mark, 1u, memory_order_seq_cst);
    }
    /* A receiver may be waiting for the last sender in flight to decide
     * SL_CLOSED: after a close, every unmark wakes them to look again. */
    if (atomic_load_explicit(&ch->closed, memory_order_seq_cst))
        sl_event_notify_all(&ch->not_empty);
}

static bool senders_in_flight(const sl_chan *ch)
{
    unsigned slots = ch->flavor == SL_SPSC ? 1 : SL_SEND_SLOTS;
    for (unsigned i = 0; i < slots; i++)
        /* Acquire: pairs with send_end's release, so a push that landed
         * before the unmark is visible to the final look. */
        if (atomic_load_explicit(&ch->in_flight[i].n, memory_order_acquire) != 0)
            return true;
    return false;
}

/* One non-blocking send: SL_OK, SL_EVICTED (the displaced message went to
 * `displaced`), SL_FULL, SL_ENOMEM or SL_CLOSED. Notifies one receiver and any
 * selector. Every send form goes through here. */
static sl_status send_once(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    SL_ATOMIC(uint32_t) *mark = send_begin(ch);
    sl_status st = SL_CLOSED;
    SL_FI(); /* marked in flight, closed not yet checked */
    if (!atomic_load_explicit(&ch->closed, memory_order_seq_cst))
        st = raw_push(ch, elem, displaced, ctx);
    SL_FI(); /* pushed, still marked */
    send_end(ch, mark);
    if (st == SL_OK || st == SL_EVICTED) {
        sl_event_notify_one(&ch->not_empty);
        ring_selectors(ch);
    }
    return st;
}

/* The chan_op form: a displaced message goes to the drop function. */
static sl_status try_send_once(sl_chan *ch, void *elem)
{
    return send_once(ch, elem, ch->drop, ch->drop_ctx);
}

static inline sl_status pop_once(sl_chan *ch, void *out)
{
    sl_status st = raw_pop(ch, out);
    if (st == SL_OK) {
        sl_event_notify_one(&ch->not_full);
        ring_selectors(ch);
    }
    return st;
}

sl_status sl__chan_try_send(sl_chan *ch, const void *elem)
{
    return try_send_once(ch, (void *)(uintptr_t)elem);
}

/* One non-blocking receive: SL_OK, SL_EMPTY, or SL_CLOSED once drained. */
static sl_status try_recv_once(sl_chan *ch, void *out)
{
    if (pop_once(ch, out) == SL_OK)
        return SL_OK;
    SL_FI();
    if (!is_closed(ch))
        return SL_EMPTY;
    /* Once established, "closed and drained" is final: a sender that starts
     * after it sees `closed` and refuses (its brief in-flight mark must not
     * turn a later answer back into SL_EMPTY). */
    if (atomic_load_explicit(&ch->drained, memory_order_acquire))
        return SL_CLOSED;
    /* Closed, but a send that saw it open may still be landing: until the
     * close has fenced and no sender is marked, the answer is "not yet". */
    if (!atomic_load_explicit(&ch->close_done, memory_order_acquire) || senders_in_flight(ch))
        return SL_EMPTY;
    /* Every such send has landed and is visible now: one last look. */
    if (pop_once(ch, out) == SL_OK)
        return SL_OK;
    atomic_store_explicit(&ch->drained, 1u, memory_order_release);
    return SL_CLOSED;
}

sl_status sl__chan_try_recv(sl_chan *ch, void *out) { return try_recv_once(ch, out); }

static inline bool retry_status(sl_status st) { return st == SL_FULL || st == SL_EMPTY; }

/* Phase 1: the operation itself, retried with growing pauses, then yields.
 * Returns the first final status, or SL_FULL/SL_EMPTY if none came. */
static sl_status spin_phase(sl_chan *ch, chan_op op, void *buf, uint64_t deadline)
{
    sl_status st = SL_EMPTY;
    unsigned relax = 1;
    for (unsigned i = 0; i < SL_SPIN_TRIES; i++) {
        for (unsigned k = 0; k < relax; k++)
            sl_cpu_relax();
        if (relax < SL_SPIN_RELAX_MAX)
            relax <<= 1;
        st = op(ch, buf);
        if (!retry_status(st))
            return st;
        if (deadline != SL_FOREVER && (i & 7) == 7 && sl_now_ns() >= deadline)
            return st;
    }
    for (unsigned i = 0; i < SL_SPIN_YIELDS; i++) {
        sched_yield();
        st = op(ch, buf);
        if (!retry_status(st))
            return st;
    }
    return st;
}

/* The blocking and timed forms: try, spin, then park on ev until op succeeds,
 * the channel closes, or the deadline passes. */
static sl_status wait_for(sl_chan *ch, sl_event *ev, chan_op op, void *buf, uint64_t timeout_ns)
{
    sl_status st = op(ch, buf);
    if (!retry_status(st))
        return st;
    if (timeout_ns == 0)
        return SL_TIMEDOUT;
    uint64_t deadline = sl_deadline_after(timeout_ns);
    st = spin_phase(ch, op, buf, deadline);
    if (!retry_status(st))
        return st;
    for (;;) {
        uint32_t key = sl_event_prepare(ev);
        SL_FI(); /* registered, not yet re-checked */
        st = op(ch, buf);
        if (!retry_status(st)) {
            sl_event_cancel(ev);
            return st;
        }
        sl_status w = sl_event_wait(ev, key, deadline);
        /* Always try once more after waking, also at the deadline: a notify
         * that chose us must not be lost with us. */
        st = op(ch, buf);
        if (!retry_status(st))
            return st;
        if (w == SL_TIMEDOUT)
            return SL_TIMEDOUT;
    }
}

SL_API sl_status sl_chan_try_send(sl_chan *ch, const void *elem)
{
    if (!ch || !elem)
        return SL_EINVAL;
    return try_send_once(ch, (void *)(uintptr_t)elem);
}

SL_API sl_status sl_chan_send_for(sl_chan *ch, const void *elem, uint64_t timeout_ns)
{
    if (!ch || !elem)
        return SL_EINVAL;
    return wait_for(ch, &ch->not_full, try_send_once, (void *)(uintptr_t)elem, timeout_ns);
}

SL_API sl_status sl_chan_send(sl_chan *ch, const void *elem)
{
    return sl_chan_send_for(ch, elem, SL_FOREVER);
}

/* The pointer move: send *pp the way `mode` says, and clear it once it has
 * left (SL_OK, or SL_EVICTED: sent all the same). */
enum ptr_mode { PTR_WAIT, PTR_TRY, PTR_FOR };

static sl_status send_ptr(sl_chan *ch, void **pp, enum ptr_mode mode, uint64_t timeout_ns)
{
    if (!ch || !pp || ch->elem_size != sizeof(void *))
        return SL_EINVAL;
    sl_status st = mode == PTR_WAIT  ? sl_chan_send(ch, pp)
                   : mode == PTR_TRY ? sl_chan_try_send(ch, pp)
                                     : sl_chan_send_for(ch, pp, timeout_ns);
    if (st == SL_OK || st == SL_EVICTED)
        *pp = NULL;
    return st;
}

SL_API sl_status sl_chan_send_ptr(sl_chan *ch, void **pp)
{
    return send_ptr(ch, pp, PTR_WAIT, 0);
}

SL_API sl_status sl_chan_try_send_ptr(sl_chan *ch, void **pp)
{
    return send_ptr(ch, pp, PTR_TRY, 0);
}

SL_API sl_status sl_chan_send_ptr_for(sl_chan *ch, void **pp, uint64_t timeout_ns)
{
    return send_ptr(ch, pp, PTR_FOR, timeout_ns);
}

static void copy_displaced(void *elem, void *ctx)
{
    void **c = ctx;
    memcpy(c[1], elem, ((sl_chan *)c[0])->elem_size);
}

SL_API sl_status sl_chan_send_evict(sl_chan *ch, const void *elem, void *evicted)
{
    if (!ch || !elem || !evicted || ch->flavor != SL_RING)
        return SL_EINVAL;
    void *ctx[2] = {ch, evicted};
    return send_once(ch, elem, copy_displaced, ctx);
}

SL_API sl_status sl_chan_try_recv(sl_chan *ch, void *out)
{
    if (!ch || !out)
        return SL_EINVAL;
    return try_recv_once(ch, out);
}

SL_API sl_status sl_chan_recv_for(sl_chan *ch, void *out, uint64_t timeout_ns)
{
    if (!ch || !out)
        return SL_EINVAL;
    return wait_for(ch, &ch->not_empty, try_recv_once, out, timeout_ns);
}

SL_API sl_status sl_chan_recv(sl_chan *ch, void *out)
{
    return sl_chan_recv_for(ch, out, SL_FOREVER);
}

SL_API size_t sl_chan_try_send_n(sl_chan *ch, const void *elems, size_t n)
{
    if (!ch || !elems || n == 0)
        return 0;
    SL_ATOMIC(uint32_t) *mark = send_begin(ch);
    size_t sent = 0;
    if (!atomic_load_explicit(&ch->closed, memory_order_seq_cst))
        sent = raw_push_n(ch, elems, n);
    send_end(ch, mark);
    if (sent) {
        sl_event_notify_n(&ch->not_empty, sent);
        ring_selectors(ch);
    }
    return sent;
}

static size_t pop_n_once(sl_chan *ch, void *out, size_t n)
{
    size_t got = raw_pop_n(ch, out, n);
    if (got) {
        sl_event_notify_n(&ch->not_full, got);
        ring_selectors(ch);
    }
    return got;
}

SL_API size_t sl_chan_try_recv_n(sl_chan *ch, void *out, size_t n)
{
    if (!ch || !out || n == 0)
        return 0;
    size_t got = pop_n_once(ch, out, n);
    /* As try_recv_once: once closed, fenced and no sender in flight, every
     * send has landed; look again. */
    if (got < n && is_closed(ch) && atomic_load_explicit(&ch->close_done, memory_order_acquire) &&
        !senders_in_flight(ch))
        got += pop_n_once(ch, (unsigned char *)out + got * ch->elem_size, n - got);
    return got;
}

SL_API void sl_chan_close(sl_chan *ch)
{
    if (!ch)
        return;
    /* seq_cst: the flag is the condition both eventcounts' waiters re-check. */
    if (atomic_exchange_explicit(&ch->closed, 1u, memory_order_seq_cst) == 0) {
        SL_FI(); /* closed, not yet fenced */
        /* Every sender either saw `closed` or is visibly marked in flight. */
        sl_event_heavy_fence();
        /* seq_cst: before the notifies' waiter loads (receivers parked on
         * "close not done yet" must not miss it). */
        atomic_store_explicit(&ch->close_done, 1u, memory_order_seq_cst);
        sl_event_notify_all(&ch->not_empty);
        sl_event_notify_all(&ch->not_full);
        ring_selectors(ch);
    }
}

SL_API bool sl_chan_is_closed(const sl_chan *ch) { return ch && is_closed(ch); }

SL_API size_t sl_chan_len(const sl_chan *ch)
{
    if (!ch)
        return 0;
    return raw_len(ch);
}

SL_API size_t sl_chan_cap(const sl_chan *ch) { return ch ? ch->capacity : 0; }

SL_API sl_flavor sl_chan_flavor(const sl_chan *ch) { return ch ? ch->flavor : (sl_flavor)0; }

SL_API size_t sl_chan_elem_size(const sl_chan *ch) { return ch ? ch->elem_size : 0; }
