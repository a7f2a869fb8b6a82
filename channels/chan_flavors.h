/*
 * channels/chan_flavors.h — the channel façade's flavour table (internal):
 * one adapter per flavour, the table that maps an sl_flavor to its adapter,
 * and the dispatch over it. What an adapter is (its type) is
 * channels/chan_adapter.h, and how a sender marks itself in flight, which
 * each adapter picks, channels/chan_marks.h (both included below).
 *
 * Adding a flavour is its raw queue, its member of the queue union
 * (chan_impl.h), an adapter and a row here, and its sl_flavor value
 * (docs/design.md, "The flavour table, and adding a flavour"). Outside this
 * file, nothing in the façade names a flavour.
 *
 * Static definitions, included by channels/chan.c alone: the adapters must
 * be visible where the per-message paths are compiled, so that each
 * dispatch inlines its adapter's calls.
 */
#ifndef SLUICE_CHANNELS_CHAN_FLAVORS_H
#define SLUICE_CHANNELS_CHAN_FLAVORS_H

#include "chan_impl.h"
#include "rings.h"
#include "internal/epoch.h"
#include "internal/testing.h"
#include "internal/sysops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- senders in flight: channels/chan_marks.h ---------------------------- */
#include "chan_marks.h"

/* ---- batches one message at a time ---------------------------------------
 * For a flavour whose queue has no batch step of its own: messages go (or
 * come) one by one until one is refused, and the count is what went. Inlined
 * with the single step it is given, so each adapter's loop is its own. */
static inline __attribute__((always_inline)) size_t
push_each(sl_chan *ch, const void *elems, size_t n, sl_status (*push)(sl_chan *, const void *))
{
    const unsigned char *p = elems;
    size_t k = 0;
    while (k < n && push(ch, p + k * ch->elem_size) == SL_OK)
        k++;
    return k;
}

static inline __attribute__((always_inline)) size_t
pop_each(sl_chan *ch, void *out, size_t n, sl_status (*pop)(sl_chan *, void *))
{
    unsigned char *p = out;
    size_t k = 0;
    while (k < n && pop(ch, p + k * ch->elem_size) == SL_OK)
        k++;
    return k;
}

/* ---- the adapters: the interface, channels/chan_adapter.h -------------- */
#include "chan_adapter.h"

/* A queue's messages come only from sends, each of which notifies. */
static uint64_t queue_ready_at(const sl_chan *ch)
{
    (void)ch;
    return SL_FOREVER;
}

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

/* A release store publishes; flag_unmark's fence orders it. The full
 * branch re-arms a send-end descriptor (chanfd.c) and returns the constant,
 * not the call's value (always SL_FULL): a status that comes back from the
 * call is kept in a register of its own across send_end, which gcc zeroes
 * on the success path (one instruction per send); with the constant, that
 * path's SL_OK is the zero already loaded from `closed` (callgrind,
 * sl-opcount chan-spsc: 75 instructions per try_send, as with no hook). */
static inline sl_status spsc_push(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    if (__builtin_expect(sl_spsc_try_push(&ch->q.spsc, elem) == SL_OK, 1))
        return SL_OK;
    (void)sl__chanfd_full(ch);
    return SL_FULL;
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
    .ready_at = queue_ready_at,
    .light_mark = true,
};

/* SL_MPMC: the ring of stamped cells; its steps are seq_cst read-modify-writes.
 * Its senders mark themselves in their records (record_mark). */
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
    /* not_full: a push that gives back the spare another push found missing
     * wakes the senders that may have slept on it (channels/mpmc_swap.c). */
    sl_status st = sl__mpmc_send(&ch->q.mpmc, elem, &ch->not_full);
    if (__builtin_expect(st == SL_OK, 1))
        return SL_OK;
    return st == SL_FULL ? sl__chanfd_full(ch) : st;
}

static inline sl_status mpmc_pop(sl_chan *ch, void *out)
{
    return sl_mpmc_try_pop(&ch->q.mpmc, out);
}

static inline size_t mpmc_push_n(sl_chan *ch, const void *elems, size_t n)
{
    return sl__mpmc_send_n(&ch->q.mpmc, elems, n, &ch->not_full);
}

static inline size_t mpmc_pop_n(sl_chan *ch, void *out, size_t n)
{
    return sl_mpmc_pop_n(&ch->q.mpmc, out, n);
}

static inline size_t mpmc_len(const sl_chan *ch) { return sl_mpmc_len(&ch->q.mpmc); }

/* The used ring's full and empty tests, which every form's push and pop
 * answer SL_FULL and SL_EMPTY on (cellring.h): a full used ring holds
 * `capacity` messages whatever the form, and an empty one none. */
static inline bool mpmc_looks_full(const sl_chan *ch)
{
    sl__cellring r = sl__mpmc_used_ring(&ch->q.mpmc);
    return sl__cellring_full(&r);
}

static inline bool mpmc_looks_empty(const sl_chan *ch)
{
    sl__cellring r = sl__mpmc_used_ring(&ch->q.mpmc);
    return sl__cellring_empty(&r);
}

static const flavor_adapter mpmc_adapter = {
    .init = mpmc_init, .drain_destroy = mpmc_drain_destroy,
    .mark = record_mark, .unmark = record_unmark,
    .push = mpmc_push, .pop = mpmc_pop,
    .push_n = mpmc_push_n, .pop_n = mpmc_pop_n, .len = mpmc_len,
    .ready_at = queue_ready_at,
    .light_mark = true, .record_marks = true,
    .looks_full = mpmc_looks_full, .looks_empty = mpmc_looks_empty,
};

/* SL_LIST: the unbounded list; its steps are seq_cst read-modify-writes. It
 * has no capacity and no counters to start elsewhere. Its senders mark
 * themselves in their epoch records (epoch_mark), and push inside the
 * epoch section the mark entered. */
static inline sl_status list_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    return sl_list_init(&ch->q.list, o->elem_size);
}

static inline void list_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx)
{
    sl__list_drain(&ch->q.list, fn, ctx);
    sl_list_destroy(&ch->q.list);
}

/* Inside the epoch section epoch_mark entered. */
static inline sl_status list_push(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    return sl__list_push_entered(&ch->q.list, elem, sl__epoch_self);
}

static inline sl_status list_pop(sl_chan *ch, void *out)
{
    return sl_list_try_pop(&ch->q.list, out);
}

static inline size_t list_push_n(sl_chan *ch, const void *elems, size_t n)
{
    return sl__list_push_n_entered(&ch->q.list, elems, n, sl__epoch_self);
}

static inline size_t list_pop_n(sl_chan *ch, void *out, size_t n)
{
    return sl_list_pop_n(&ch->q.list, out, n);
}

static inline size_t list_len(const sl_chan *ch) { return sl_list_len(&ch->q.list); }

static const flavor_adapter list_adapter = {
    .init = list_init, .drain_destroy = list_drain_destroy,
    .mark = epoch_mark, .unmark = epoch_unmark,
    .push = list_push, .pop = list_pop,
    .push_n = list_push_n, .pop_n = list_pop_n, .len = list_len,
    .ready_at = queue_ready_at,
    .light_mark = true, .record_marks = true,
    .unbounded = true,
};

/* SL_RING: the overwrite ring on SL_MPMC's cells; seq_cst read-modify-writes. A
 * push into a full ring displaces the oldest message instead of failing. */
static inline sl_status ring_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    return sl__ring_init_at(&ch->q.ring, o->elem_size, o->capacity, start);
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
    .ready_at = queue_ready_at,
    .evicts = true,
};

/* SL_TIMER: no queue, a clock (channels/timer.h). A pop takes the fire that
 * is due with a compare-and-swap; no notify follows it (recv_only: no
 * sender waits for room). A closed timer is stopped: no fire, even a due one,
 * so the façade answers SL_CLOSED. Sends never get here (recv_only). */
static inline sl_status timer_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    sl__timer_arm(&ch->q.timer, SL_FOREVER, 0); /* the constructor arms it */
    return SL_OK;
}

static inline void timer_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx) {}

static inline sl_status timer_push(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    return SL_EINVAL;
}

static inline bool timer_stopped(const sl_chan *ch)
{
    /* Acquire: pairs with close's exchange, as is_closed (chan.c). */
    return atomic_load_explicit(&ch->closed, memory_order_acquire) != 0;
}

static inline sl_status timer_pop(sl_chan *ch, void *out)
{
    uint64_t at;
    if (timer_stopped(ch) || sl__timer_take(&ch->q.timer, &ch->closed, &at) != SL_OK)
        return SL_EMPTY;
    memcpy(out, &at, sizeof at); /* out may be unaligned */
    return SL_OK;
}

static inline size_t timer_push_n(sl_chan *ch, const void *elems, size_t n) { return 0; }

/* At most one fire is ever pending. */
static inline size_t timer_pop_n(sl_chan *ch, void *out, size_t n)
{
    return timer_pop(ch, out) == SL_OK;
}

static uint64_t timer_ready_at(const sl_chan *ch)
{
    return timer_stopped(ch) ? SL_FOREVER : sl__timer_next(&ch->q.timer);
}

static inline size_t timer_len(const sl_chan *ch)
{
    return timer_ready_at(ch) <= sl__now_ns();
}

static const flavor_adapter timer_adapter = {
    .init = timer_init, .drain_destroy = timer_drain_destroy,
    .mark = count_mark, .unmark = count_unmark,
    .push = timer_push, .pop = timer_pop,
    .push_n = timer_push_n, .pop_n = timer_pop_n, .len = timer_len,
    .ready_at = timer_ready_at,
    .recv_only = true, .own_ctor = true,
};

/* SL_BROADCAST: one ring shared by the send handle and its subscriber
 * handles (channels/broadcast.h). Subscribers park on the ring's event, not
 * on their handle's: the push wakes them all itself, after its stamp's
 * release store and sl_event_fence(), and the façade's notify of the send
 * handle finds nobody there. The in-flight mark is a count in the shared
 * ring, so that it outlives the send handle for the subscribers that read
 * it. A subscriber's pop may answer SL_LAGGED. */
static inline sl_status bcast_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    return sl__bcast_init(&ch->q.bcast, o);
}

static inline void bcast_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx)
{
    sl__bcast_release(&ch->q.bcast); /* the ring drops with its own drop function */
}

static inline SL_ATOMIC(uint32_t) *bcast_mark(sl_chan *ch)
{
    return sl__bcast_mark(ch);
}

static inline sl_status bcast_push(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    return sl__bcast_push(ch, elem);
}

static inline sl_status bcast_pop(sl_chan *ch, void *out) { return sl__bcast_pop(ch, out); }

/* Every send into the send handle succeeds (the oldest is overwritten). */
static inline size_t bcast_push_n(sl_chan *ch, const void *elems, size_t n)
{
    return push_each(ch, elems, n, sl__bcast_push);
}

static inline size_t bcast_pop_n(sl_chan *ch, void *out, size_t n)
{
    return sl__bcast_pop_n(ch, out, n);
}

static inline size_t bcast_len(const sl_chan *ch) { return sl__bcast_len(ch); }

/* SL_FOREVER, as queue_ready_at, but a function of its own: a send notifies
 * the ring's event, not the subscriber handle, so an event-loop descriptor
 * cannot follow a subscriber (sl__chan_changes_notify says no). */
static uint64_t bcast_ready_at(const sl_chan *ch)
{
    (void)ch;
    return SL_FOREVER;
}

static const flavor_adapter bcast_adapter = {
    .init = bcast_init, .drain_destroy = bcast_drain_destroy,
    .mark = bcast_mark, .unmark = sl__bcast_unmark,
    .push = bcast_push, .pop = bcast_pop,
    .push_n = bcast_push_n, .pop_n = bcast_pop_n, .len = bcast_len,
    .ready_at = bcast_ready_at,
    .lags = true, .recv_event = sl__bcast_recv_event,
    .recv_unwoken = sl__bcast_recv_unwoken, .on_close = sl__bcast_closed,
    .sending_elsewhere = sl__bcast_sending,
};

/* ---- shared channels: channels/chan_flavors_shared.h ------------------- */
#include "chan_flavors_shared.h"

/* SL__RENDEZVOUS: SL_MPMC of capacity 0 (channels/rendezvous.c). Nothing is
 * stored: a push hands the message to a waiting receiver's offer, a pop takes
 * it from a waiting sender's, both under the channel's short lock, whose
 * release and acquire order them before the notifies that follow (and the
 * claim is a seq_cst compare-and-swap). Waiters post offers (rdv_await). */
static inline sl_status rdv_init(sl_chan *ch, const sl_chan_opts *o, uint64_t start)
{
    if (o->elem_size == 0 || o->elem_size > SL_ELEM_MAX)
        return SL_EINVAL;
    sl__rdv_init(&ch->q.rdv);
    return SL_OK;
}

/* Nothing is ever inside: the drop function never runs. A thread still
 * waiting is refused as refuse_free_in_use does (chan.c). */
static inline void rdv_drain_destroy(sl_chan *ch, sl_visit_fn fn, void *ctx)
{
    if (ch->q.rdv.waiting[0].first || ch->q.rdv.waiting[1].first) {
        fprintf(stderr, "sluice: sl_chan_free(%p) while a thread still waits in it; close it, "
                        "let every thread return, then free it.\n", (const void *)ch);
        abort();
    }
}

static inline sl_status rdv_push(sl_chan *ch, const void *elem, sl_visit_fn displaced, void *ctx)
{
    return sl__rdv_give(ch, elem);
}

static inline sl_status rdv_pop(sl_chan *ch, void *out) { return sl__rdv_take(ch, out); }

/* Batches go one message at a time, each to its own waiting partner. */
static inline size_t rdv_push_n(sl_chan *ch, const void *elems, size_t n)
{
    return push_each(ch, elems, n, sl__rdv_give);
}

static inline size_t rdv_pop_n(sl_chan *ch, void *out, size_t n)
{
    return pop_each(ch, out, n, sl__rdv_take);
}

static inline size_t rdv_len(const sl_chan *ch) { return 0; }

static const flavor_adapter rdv_adapter = {
    .init = rdv_init, .drain_destroy = rdv_drain_destroy,
    .mark = count_mark, .unmark = count_unmark,
    .push = rdv_push, .pop = rdv_pop,
    .push_n = rdv_push_n, .pop_n = rdv_pop_n, .len = rdv_len,
    .ready_at = queue_ready_at,
    .send = sl__rdv_send, .await = sl__rdv_await, .on_close = sl__rdv_close, .reports = SL_MPMC,
};

/* ---- the flavour table ----------------------------------------------------
 * One row per flavour: X(its sl_flavor value, its adapter, ...), the rest of
 * the arguments passed through for the dispatch below. Outside the adapters
 * and this table, no code in the façade names a flavour. */
#define CHAN_FLAVORS(X, ...)              \
    X(SL_SPSC, spsc_adapter, __VA_ARGS__) \
    X(SL_MPMC, mpmc_adapter, __VA_ARGS__) \
    X(SL_LIST, list_adapter, __VA_ARGS__) \
    X(SL_RING, ring_adapter, __VA_ARGS__) \
    X(SL_TIMER, timer_adapter, __VA_ARGS__) \
    X(SL_BROADCAST, bcast_adapter, __VA_ARGS__) \
    X(SL__RENDEZVOUS, rdv_adapter, __VA_ARGS__)

/* The rows of channels in shared memory (sluice/shm.h): adapter_of knows
 * them like every row; DISPATCH reaches them one level down
 * (SHARED_DISPATCHER below). */
#define SHARED_FLAVORS(X, ...)                            \
    X(SL__SPSC_SHARED, spsc_shared_adapter, __VA_ARGS__) \
    X(SL__MPMC_SHARED, mpmc_shared_adapter, __VA_ARGS__)

/* The adapter of flavour f, or NULL when f has no row (a bad sl_chan_opts).
 * For what runs once per channel; the per-message paths use DISPATCH. */
#define ADAPTER_ROW(flavor, adapter, unused) \
    case flavor: return &adapter;
static const flavor_adapter *adapter_of(sl_flavor f)
{
    switch (f) { CHAN_FLAVORS(ADAPTER_ROW, 0) SHARED_FLAVORS(ADAPTER_ROW, 0) }
    return NULL;
}

static bool flavor_supported(sl_flavor f) { return adapter_of(f) != NULL; }

/* The row sl_chan_new's options ask for: SL_MPMC of capacity 0 is a
 * rendezvous channel; SL__RENDEZVOUS itself is not for callers (0: no row). */
static sl_flavor row_of(const sl_chan_opts *o)
{
    if (o->flavor == SL__RENDEZVOUS)
        return (sl_flavor)0;
    return o->flavor == SL_MPMC && o->capacity == 0 ? SL__RENDEZVOUS : o->flavor;
}

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
        switch (f) {                                                   \
            CHAN_FLAVORS(DISPATCH_ROW, fn, __VA_ARGS__)                \
            SHARED_FLAVORS(DISPATCH_SHARED_ROW, fn, __VA_ARGS__)       \
        }                                                              \
        __builtin_unreachable();                                       \
    } while (0)

/* A shared row goes to fn's out-of-line instance for the shared rows
 * (SHARED_DISPATCHER): inlined into the one switch, its cases made gcc keep
 * one more register, and a stack frame, for every flavour's path (measured:
 * 3 to 8 instructions per in-process send + receive pair). Behind a cold
 * trampoline, the switch's register allocation is the in-process rows' as
 * before; a shared channel pays one more direct jump. */
#define DISPATCH_SHARED_ROW(flavor, adapter, fn, ...) \
    case flavor: return fn##_shared(__VA_ARGS__);

/* Defines fn_shared(params), the cold trampoline, and fn_shared_rows, fn
 * for the shared rows. args are params' names, the channel among them as
 * `ch`. fn_shared_rows is marked hot: called only from a cold function, gcc
 * would take it for cold too and compile it for size (a 64-byte message
 * copied by `rep movsl`, the adapters' mark and unmark called out of line:
 * SL_SPSC in shared memory at 64 bytes measured ×0.77 of this, and 38
 * more instructions a pair; docs/performance.md). */
#define SHARED_DISPATCHER(ret, fn, params, ...)                    \
    static __attribute__((noinline, hot)) ret fn##_shared_rows params \
    {                                                              \
        switch (ch->flavor) {                                      \
            SHARED_FLAVORS(DISPATCH_ROW, fn, __VA_ARGS__)          \
        default: __builtin_unreachable();                          \
        }                                                          \
    }                                                              \
    static __attribute__((noinline, cold)) ret fn##_shared params  \
    {                                                              \
        return fn##_shared_rows(__VA_ARGS__);                      \
    }

#endif /* SLUICE_CHANNELS_CHAN_FLAVORS_H */
