/*
 * channels/chan.c — the channel façade: close, blocking, timeouts, batches and
 * ownership over the raw queues, reached through one adapter per flavour.
 *
 * In order: how senders mark themselves in flight; the adapters, one per
 * flavour, each putting its raw queue in the façade's terms and issuing the
 * fences its queue's ordering leaves to it; the flavour table, which maps an
 * sl_flavor to its adapter, and the dispatch over it; then the façade, whose
 * per-message paths are written once against an adapter. Adding a flavour is
 * its raw queue, its member of the queue union (chan_impl.h), an adapter and
 * a row here, and its sl_flavor value (docs/design.md, "The flavour table,
 * and adding a flavour").
 *
 * Every operation is a non-blocking attempt (send_once / try_recv_once); the
 * blocking and timed forms repeat it through the await protocol
 * (internal/await.h): a bounded spin, then parking on an eventcount —
 * receivers on `not_empty`, senders on `not_full`. A successful send notifies
 * one receiver and a successful receive one sender, and both notifies cost
 * one load while nobody is parked.
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rings.h"
#include "internal/await.h"
#include "internal/testing.h"

/* ---- senders in flight ---------------------------------------------------
 * A sender marks itself before it checks `closed` and unmarks after its push.
 * The closer sets `closed`, issues the heavy barrier, then sets `close_done`.
 * Either a sender's check saw `closed` (it refuses), or its mark is visible to
 * anyone who saw `close_done` (the Dekker pair of sluice/park.h, asymmetric
 * where membarrier is available). Receivers report SL_CLOSED only after
 * `close_done` with no sender marked: every send that saw the channel open
 * has landed by then.
 *
 * How a sender marks itself is its flavour's choice (the adapter's mark and
 * unmark): one of the two schemes below. */

/* One sender at a time (SL_SPSC): slot 0 as a plain flag, each store
 * followed by the eventcount's fence — no read-modify-write on the path. */
static inline SL_ATOMIC(uint32_t) *flag_mark(sl_chan *ch)
{
    SL_ATOMIC(uint32_t) *flag = &ch->in_flight[0].n;
    /* Relaxed: only this sender writes the flag; the fence orders it. */
    atomic_store_explicit(flag, 1u, memory_order_relaxed);
    sl_event_fence(); /* the mark before the closed-check */
    return flag;
}

static inline void flag_unmark(SL_ATOMIC(uint32_t) *flag)
{
    /* Release: the push is visible to whoever sees the flag down. */
    atomic_store_explicit(flag, 0u, memory_order_release);
    /* The unmark before the closed load that follows, and with it the push's
     * release store before the notify's waiter load. */
    sl_event_fence();
}

/* Any number of senders: a count in a slot picked once per thread, a line
 * per slot so that senders on different threads do not share one. */
static _Thread_local unsigned send_slot_of_thread = UINT32_MAX;
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

/* Whether any sender is marked. Every slot, whatever the scheme: a flag's
 * unused slots stay 0, and only a receiver deciding SL_CLOSED asks. */
static bool senders_in_flight(const sl_chan *ch)
{
    for (unsigned i = 0; i < SL_SEND_SLOTS; i++)
        /* Acquire: pairs with the unmark's release, so a push that landed
         * before the unmark is visible to the final look. */
        if (atomic_load_explicit(&ch->in_flight[i].n, memory_order_acquire) != 0)
            return true;
    return false;
}

/* ---- the adapters ---------------------------------------------------------
 * One per flavour: its raw queue's operations in the façade's terms, and the
 * ordering the façade relies on. After every push or pop that changed the
 * queue the façade notifies; the await protocol (internal/await.h) needs the
 * change ordered before the notify's load of the waiter count. The queues
 * that change state with a seq_cst read-modify-write (MPMC, list, ring) give
 * that as they are; SPSC publishes with release stores, so its adapter
 * fences: after a pop itself, after a push in its unmark (every push runs
 * between mark and unmark). */
typedef struct flavor_adapter {
    /* Sets up ch->q for o's message size and capacity, with the counters at
     * `start` where the queue has them (the test hook sl__chan_new_at). */
    sl_status (*init)(sl_chan *ch, const sl_chan_opts *o, uint64_t start);
    /* Hands what is left to fn (if any) in place, oldest first, then frees. */
    void (*drain_destroy)(sl_chan *ch, sl_visit_fn fn, void *ctx);
    /* Marks the calling sender in flight, before its closed-check; unmark
     * takes what mark returned, after the push (flag_* or count_* above). */
    SL_ATOMIC(uint32_t) *(*mark)(sl_chan *ch);
    void (*unmark)(SL_ATOMIC(uint32_t) *mark);
    /* One push: SL_OK, SL_EVICTED (the displaced message went to
     * `displaced`), SL_FULL or SL_ENOMEM. */
    sl_status (*push)(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx);
    /* One pop: SL_OK or SL_EMPTY. */
    sl_status (*pop)(sl_chan *ch, void *out);
    /* Up to n messages in order; how many went. A ring evicts instead of
     * refusing, through the channel's drop function. */
    size_t (*push_n)(sl_chan *ch, const void *elems, size_t n);
    size_t (*pop_n)(sl_chan *ch, void *out, size_t n);
    size_t (*len)(const sl_chan *ch);
    bool unbounded; /* no capacity: sl_chan_cap says SIZE_MAX */
    bool evicts;    /* a push into a full queue displaces the oldest (sl_chan_send_evict) */
} flavor_adapter;

/* SL_SPSC: the ring whose fast paths are inline (sluice/spsc.h). */
static inline sl_status spsc_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    return sl__spsc_init_at(&ch->q.spsc, o->elem_size, o->capacity, start);
}

static inline void spsc_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx)
{
    if (fn)
        sl__spsc_drain(&ch->q.spsc, fn, ctx);
    sl_spsc_destroy(&ch->q.spsc);
}

/* A release store publishes; flag_unmark's fence orders it. */
static inline sl_status spsc_push(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    return sl_spsc_try_push(&ch->q.spsc, elem) == SL_OK ? SL_OK : SL_FULL;
}

static inline sl_status spsc_pop(sl_chan *ch, void *out)
{
    if (sl_spsc_try_pop(&ch->q.spsc, out) != SL_OK)
        return SL_EMPTY;
    sl_event_fence(); /* head store before waiter load (asymmetric: see park.h) */
    return SL_OK;
}

static inline size_t spsc_push_n(sl_chan *ch, const void *elems, size_t n)
{
    return sl_spsc_push_n(&ch->q.spsc, elems, n); /* fenced by flag_unmark */
}

static inline size_t spsc_pop_n(sl_chan *ch, void *out, size_t n)
{
    size_t k = sl_spsc_pop_n(&ch->q.spsc, out, n);
    sl_event_fence(); /* head store before waiter load (asymmetric: see park.h) */
    return k;
}

static inline size_t spsc_len(const sl_chan *ch) { return sl_spsc_len(&ch->q.spsc); }

static const flavor_adapter spsc_adapter = {
    .init = spsc_init, .drain_destroy = spsc_drain_destroy,
    .mark = flag_mark, .unmark = flag_unmark,
    .push = spsc_push, .pop = spsc_pop,
    .push_n = spsc_push_n, .pop_n = spsc_pop_n, .len = spsc_len,
};

/* SL_MPMC: the SCQ queue; its steps are seq_cst read-modify-writes. */
static inline sl_status mpmc_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    return sl__mpmc_init_at(&ch->q.mpmc, o->elem_size, o->capacity, start);
}

static inline void mpmc_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx)
{
    if (fn)
        sl__mpmc_drain(&ch->q.mpmc, fn, ctx);
    sl_mpmc_destroy(&ch->q.mpmc);
}

static inline sl_status mpmc_push(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    return sl_mpmc_try_push(&ch->q.mpmc, elem);
}

static inline sl_status mpmc_pop(sl_chan *ch, void *out)
{
    return sl_mpmc_try_pop(&ch->q.mpmc, out);
}

static inline size_t mpmc_push_n(sl_chan *ch, const void *elems, size_t n)
{
    return sl_mpmc_push_n(&ch->q.mpmc, elems, n);
}

static inline size_t mpmc_pop_n(sl_chan *ch, void *out, size_t n)
{
    return sl_mpmc_pop_n(&ch->q.mpmc, out, n);
}

static inline size_t mpmc_len(const sl_chan *ch) { return sl_mpmc_len(&ch->q.mpmc); }

static const flavor_adapter mpmc_adapter = {
    .init = mpmc_init, .drain_destroy = mpmc_drain_destroy,
    .mark = count_mark, .unmark = count_unmark,
    .push = mpmc_push, .pop = mpmc_pop,
    .push_n = mpmc_push_n, .pop_n = mpmc_pop_n, .len = mpmc_len,
};

/* SL_LIST: the unbounded list; its steps are seq_cst read-modify-writes. It
 * has no capacity and no counters to start elsewhere. */
static inline sl_status list_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    return sl_list_init(&ch->q.list, o->elem_size);
}

static inline void list_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx)
{
    sl__list_drain(&ch->q.list, fn, ctx);
    sl_list_destroy(&ch->q.list);
}

static inline sl_status list_push(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    return sl_list_try_push(&ch->q.list, elem);
}

static inline sl_status list_pop(sl_chan *ch, void *out)
{
    return sl_list_try_pop(&ch->q.list, out);
}

static inline size_t list_push_n(sl_chan *ch, const void *elems, size_t n)
{
    return sl_list_push_n(&ch->q.list, elems, n);
}

static inline size_t list_pop_n(sl_chan *ch, void *out, size_t n)
{
    return sl_list_pop_n(&ch->q.list, out, n);
}

static inline size_t list_len(const sl_chan *ch) { return sl_list_len(&ch->q.list); }

static const flavor_adapter list_adapter = {
    .init = list_init, .drain_destroy = list_drain_destroy,
    .mark = count_mark, .unmark = count_unmark,
    .push = list_push, .pop = list_pop,
    .push_n = list_push_n, .pop_n = list_pop_n, .len = list_len,
    .unbounded = true,
};

/* SL_RING: the overwrite ring on SCQ slots; seq_cst read-modify-writes. A
 * push into a full ring displaces the oldest message instead of failing. */
static inline sl_status ring_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    return sl_ring_init(&ch->q.ring, o->elem_size, o->capacity);
}

static inline void ring_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx)
{
    sl__ring_drain(&ch->q.ring, fn, ctx);
    sl_ring_destroy(&ch->q.ring);
}

static inline sl_status ring_push(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    return sl__ring_push_visit(&ch->q.ring, elem, displaced, ctx);
}

static inline sl_status ring_pop(sl_chan *ch, void *out)
{
    return sl_ring_try_pop(&ch->q.ring, out);
}

/* Every send into a ring succeeds: evicting ones count as sent. */
static inline size_t ring_push_n(sl_chan *ch, const void *elems, size_t n)
{
    const unsigned char *p = elems;
    for (size_t i = 0; i < n; i++)
        sl__ring_push_visit(&ch->q.ring, p + i * ch->elem_size, ch->drop, ch->drop_ctx);
    return n;
}

static inline size_t ring_pop_n(sl_chan *ch, void *out, size_t n)
{
    return sl_ring_pop_n(&ch->q.ring, out, n);
}

static inline size_t ring_len(const sl_chan *ch) { return sl_ring_len(&ch->q.ring); }

static const flavor_adapter ring_adapter = {
    .init = ring_init, .drain_destroy = ring_drain_destroy,
    .mark = count_mark, .unmark = count_unmark,
    .push = ring_push, .pop = ring_pop,
    .push_n = ring_push_n, .pop_n = ring_pop_n, .len = ring_len,
    .evicts = true,
};

/* ---- the flavour table ----------------------------------------------------
 * One row per flavour: X(its sl_flavor value, its adapter, ...), the rest of
 * the arguments passed through for the dispatch below. Outside the adapters
 * and this table, no code in the façade names a flavour. */
#define CHAN_FLAVORS(X, ...)              \
    X(SL_SPSC, spsc_adapter, __VA_ARGS__) \
    X(SL_MPMC, mpmc_adapter, __VA_ARGS__) \
    X(SL_LIST, list_adapter, __VA_ARGS__) \
    X(SL_RING, ring_adapter, __VA_ARGS__)

/* The adapter of flavour f, or NULL when f has no row (a bad sl_chan_opts).
 * For what runs once per channel; the per-message paths use DISPATCH. */
#define ADAPTER_ROW(flavor, adapter, unused) \
    case flavor: return &adapter;
static const flavor_adapter *adapter_of(sl_flavor f)
{
    switch (f) { CHAN_FLAVORS(ADAPTER_ROW, 0) }
    return NULL;
}

static bool flavor_supported(sl_flavor f) { return adapter_of(f) != NULL; }

/* The per-message paths are written once, as PER_FLAVOR functions of an
 * adapter, and DISPATCH calls one with the constant adapter of the flavour:
 * inlined into each case, the adapter's calls become direct calls and are
 * inlined in turn (the SPSC ring's fast path stays inline), for one switch
 * per operation. Calling through adapter_of(f) would add an indirect call
 * per adapter call; a switch around each adapter call would make three per
 * send (mark, push, unmark); both measured slower (docs/design.md). No
 * default: -Wswitch (in -Wall) names a flavour value without a row. Every
 * channel's flavour has a row (sl_chan_new checks), so falling out of the
 * switch is unreachable; saying so spares the last comparison. */
#define PER_FLAVOR static inline __attribute__((always_inline))
#define DISPATCH_ROW(flavor, adapter, fn, ...) \
    case flavor: return fn(&adapter, __VA_ARGS__);
#define DISPATCH(f, fn, ...)                                           \
    do {                                                               \
        switch (f) { CHAN_FLAVORS(DISPATCH_ROW, fn, __VA_ARGS__) }     \
        __builtin_unreachable();                                       \
    } while (0)

sl_status sl__chan_new_at(sl_chan **out, const sl_chan_opts *opts, uint64_t start)
{
    if (!out || !opts || !flavor_supported(opts->flavor))
        return SL_EINVAL;
    sl_chan *ch = aligned_alloc(SL_CACHELINE, sl__round_to_line(sizeof *ch));
    if (!ch)
        return SL_ENOMEM;
    memset(ch, 0, sizeof *ch);
    const flavor_adapter *a = adapter_of(opts->flavor);
    sl_status st = a->init(ch, opts, start);
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
    adapter_of(ch->flavor)->drain_destroy(ch, ch->drop, ch->drop_ctx);
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
 * state change was a seq_cst RMW or fenced, so this seq_cst load cannot miss
 * a selector whose registration came before its re-check (select.c). */
static inline void ring_selectors(sl_chan *ch)
{
    if (atomic_load_explicit(&ch->selectors, memory_order_seq_cst) != 0)
        sl_event_notify_all(&sl__select_bell);
}

/* After the push: the unmark, and the wake-up a close makes it owe. */
PER_FLAVOR void send_end(const flavor_adapter *a, sl_chan *ch, SL_ATOMIC(uint32_t) *mark)
{
    a->unmark(mark);
    /* A receiver may be waiting for the last sender in flight to decide
     * SL_CLOSED: after a close, every unmark wakes them to look again. */
    if (atomic_load_explicit(&ch->closed, memory_order_seq_cst))
        sl_event_notify_all(&ch->not_empty);
}

/* send_once for one flavour's adapter. */
PER_FLAVOR sl_status send_with(const flavor_adapter *a, sl_chan *ch, const void *elem,
                               sl_visit_fn displaced, void *ctx)
{
    SL_ATOMIC(uint32_t) *mark = a->mark(ch);
    sl_status st = SL_CLOSED;
    SL_FI(); /* marked in flight, closed not yet checked */
    if (!atomic_load_explicit(&ch->closed, memory_order_seq_cst))
        st = a->push(ch, elem, displaced, ctx);
    SL_FI(); /* pushed, still marked */
    send_end(a, ch, mark);
    if (st == SL_OK || st == SL_EVICTED) {
        sl_event_notify_one(&ch->not_empty);
        ring_selectors(ch);
    }
    return st;
}

/* One non-blocking send: SL_OK, SL_EVICTED (the displaced message went to
 * `displaced`), SL_FULL, SL_ENOMEM or SL_CLOSED. Notifies one receiver and any
 * selector. Every send form goes through here. */
static sl_status send_once(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    DISPATCH(ch->flavor, send_with, ch, elem, displaced, ctx);
}

/* A send whose displaced message (SL_RING) goes to the drop function. */
static sl_status try_send_once(sl_chan *ch, const void *elem)
{
    return send_once(ch, elem, ch->drop, ch->drop_ctx);
}

sl_status sl__chan_try_send(sl_chan *ch, const void *elem) { return try_send_once(ch, elem); }

/* One pop, and the notifies it owes. */
PER_FLAVOR sl_status pop_with(const flavor_adapter *a, sl_chan *ch, void *out)
{
    sl_status st = a->pop(ch, out);
    if (st == SL_OK) {
        sl_event_notify_one(&ch->not_full);
        ring_selectors(ch);
    }
    return st;
}

/* try_recv_once for one flavour's adapter. */
PER_FLAVOR sl_status recv_with(const flavor_adapter *a, sl_chan *ch, void *out)
{
    if (pop_with(a, ch, out) == SL_OK)
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
    if (pop_with(a, ch, out) == SL_OK)
        return SL_OK;
    atomic_store_explicit(&ch->drained, 1u, memory_order_release);
    return SL_CLOSED;
}

/* One non-blocking receive: SL_OK, SL_EMPTY, or SL_CLOSED once drained. */
static sl_status try_recv_once(sl_chan *ch, void *out)
{
    DISPATCH(ch->flavor, recv_with, ch, out);
}

sl_status sl__chan_try_recv(sl_chan *ch, void *out) { return try_recv_once(ch, out); }

/* ---- the blocking and timed forms -----------------------------------------
 * They wait through the await protocol (internal/await.h). The condition is
 * the operation itself, tried once per look: ready once its status is final
 * (not SL_FULL or SL_EMPTY), and chan_wait keeps that status. The notifies
 * the protocol asks for are the façade's own: every successful send and
 * receive notifies the other side after a change the adapter ordered before
 * the notify, close notifies both sides, and an unmark after a close the
 * receivers again. */
typedef struct chan_wait {
    sl_chan *ch;
    const void *elem; /* a send's message */
    void *out;        /* where a receive puts its message */
    sl_status st;     /* the last attempt's status */
} chan_wait;

static inline bool is_final(sl_status st) { return st != SL_FULL && st != SL_EMPTY; }

static bool send_ready(void *ctx)
{
    chan_wait *w = ctx;
    w->st = try_send_once(w->ch, w->elem);
    return is_final(w->st);
}

static bool recv_ready(void *ctx)
{
    chan_wait *w = ctx;
    w->st = try_recv_once(w->ch, w->out);
    return is_final(w->st);
}

/* What a blocking or timed form does after a first try that was not final:
 * with a timeout of 0, nothing more (SL_TIMEDOUT); otherwise wait on ev until
 * ready() holds (its status) or the timeout passes (SL_TIMEDOUT). The first
 * try is the caller's, before the clock is read, and this is out of line: a
 * call whose first try succeeds reads no clock and sets up no frame for the
 * wait. */
static __attribute__((noinline)) sl_status await_op(sl_event *ev, sl__ready_fn ready,
                                                    sl_chan *ch, const void *elem, void *out,
                                                    uint64_t timeout_ns)
{
    if (timeout_ns == 0)
        return SL_TIMEDOUT;
    chan_wait w = {.ch = ch, .elem = elem, .out = out};
    if (sl__event_await(ev, ready, &w, sl_deadline_after(timeout_ns), SL__AWAIT_SPIN) != SL_OK)
        return SL_TIMEDOUT;
    return w.st;
}

SL_API sl_status sl_chan_try_send(sl_chan *ch, const void *elem)
{
    if (!ch || !elem)
        return SL_EINVAL;
    return try_send_once(ch, elem);
}

SL_API sl_status sl_chan_send_for(sl_chan *ch, const void *elem, uint64_t timeout_ns)
{
    if (!ch || !elem)
        return SL_EINVAL;
    sl_status st = try_send_once(ch, elem);
    if (is_final(st))
        return st;
    return await_op(&ch->not_full, send_ready, ch, elem, NULL, timeout_ns);
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
    if (!ch || !elem || !evicted || !adapter_of(ch->flavor)->evicts)
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
    sl_status st = try_recv_once(ch, out);
    if (is_final(st))
        return st;
    return await_op(&ch->not_empty, recv_ready, ch, NULL, out, timeout_ns);
}

SL_API sl_status sl_chan_recv(sl_chan *ch, void *out)
{
    return sl_chan_recv_for(ch, out, SL_FOREVER);
}

/* sl_chan_try_send_n for one flavour's adapter. */
PER_FLAVOR size_t send_n_with(const flavor_adapter *a, sl_chan *ch, const void *elems, size_t n)
{
    SL_ATOMIC(uint32_t) *mark = a->mark(ch);
    size_t sent = 0;
    if (!atomic_load_explicit(&ch->closed, memory_order_seq_cst))
        sent = a->push_n(ch, elems, n);
    send_end(a, ch, mark);
    if (sent) {
        sl_event_notify_n(&ch->not_empty, sent);
        ring_selectors(ch);
    }
    return sent;
}

SL_API size_t sl_chan_try_send_n(sl_chan *ch, const void *elems, size_t n)
{
    if (!ch || !elems || n == 0)
        return 0;
    DISPATCH(ch->flavor, send_n_with, ch, elems, n);
}

/* One batch pop, and the notifies it owes. */
PER_FLAVOR size_t pop_n_with(const flavor_adapter *a, sl_chan *ch, void *out, size_t n)
{
    size_t got = a->pop_n(ch, out, n);
    if (got) {
        sl_event_notify_n(&ch->not_full, got);
        ring_selectors(ch);
    }
    return got;
}

/* sl_chan_try_recv_n for one flavour's adapter. */
PER_FLAVOR size_t recv_n_with(const flavor_adapter *a, sl_chan *ch, void *out, size_t n)
{
    size_t got = pop_n_with(a, ch, out, n);
    /* As recv_with: once closed, fenced and no sender in flight, every send
     * has landed; look again. */
    if (got < n && is_closed(ch) && atomic_load_explicit(&ch->close_done, memory_order_acquire) &&
        !senders_in_flight(ch))
        got += pop_n_with(a, ch, (unsigned char *)out + got * ch->elem_size, n - got);
    return got;
}

SL_API size_t sl_chan_try_recv_n(sl_chan *ch, void *out, size_t n)
{
    if (!ch || !out || n == 0)
        return 0;
    DISPATCH(ch->flavor, recv_n_with, ch, out, n);
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
    return adapter_of(ch->flavor)->len(ch);
}

SL_API size_t sl_chan_cap(const sl_chan *ch) { return ch ? ch->capacity : 0; }

SL_API sl_flavor sl_chan_flavor(const sl_chan *ch) { return ch ? ch->flavor : (sl_flavor)0; }

SL_API size_t sl_chan_elem_size(const sl_chan *ch) { return ch ? ch->elem_size : 0; }
