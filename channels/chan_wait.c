/*
 * channels/chan_wait.c — the channel façade's blocking and timed forms: a
 * first try, then a wait through the await protocol (internal/await.h)
 * until the try succeeds, the channel closes or the timeout passes; and the
 * receive streak that sets a receiver's first spin.
 *
 * Apart from channels/chan.c, which holds the per-message paths (send,
 * receive and their batches, compiled once per flavour against the
 * adapters of chan_flavors.h): every try here is one of those, called
 * through its out-of-line entry (sl__chan_send_once, sl__chan_try_recv,
 * sl__chan_try_recv_n), as it was when both sat in one file, and a wait
 * asks the flavour's row only on its way in (sl__chan_adapter).
 */
#include "chan_impl.h"

#include <string.h>

#include "chan_adapter.h"
#include "internal/await.h"
#include "internal/spin.h"

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
    void *out;        /* where a receive puts its message (a batch's first) */
    size_t n;         /* a batch receive's room, in messages */
    size_t got;       /* and how many its last attempt took */
    sl_status st;     /* the last attempt's status */
} chan_wait;

static inline bool is_final(sl_status st) { return st != SL_FULL && st != SL_EMPTY; }

static bool send_ready(void *ctx)
{
    chan_wait *w = ctx;
    w->st = sl__chan_try_send_once(w->ch, w->elem);
    return is_final(w->st);
}

static bool recv_ready(void *ctx)
{
    chan_wait *w = ctx;
    w->st = sl__chan_try_recv(w->ch, w->out);
    return is_final(w->st);
}

sl_status sl__chan_await(const sl__event_set *set, sl__ready_fn ready, void *ctx,
                         uint64_t deadline, unsigned flags, sl__next_fn next)
{
    for (;;) {
        uint64_t at = next(ctx);
        uint64_t until = at < deadline ? at : deadline;
        /* At `until` the await looks once more: a fire due then is taken. */
        sl_status st = sl__event_await_set(set, ready, ctx, until, flags);
        if (st == SL_OK || until == deadline)
            return st;
    }
}

/* Where ch's receivers park: on its not_empty, unless its adapter says
 * otherwise (a broadcast subscriber parks on its ring's event). Read on the
 * way into a wait only. */
static sl_event *recv_event(sl_chan *ch)
{
    const flavor_adapter *a = sl__chan_adapter(ch->flavor);
    return a->recv_event ? a->recv_event(ch) : &ch->not_empty;
}

static uint64_t chan_next(void *ctx) { return sl__chan_ready_at(((chan_wait *)ctx)->ch); }

/* What a blocking or timed form does after a first try that was not final:
 * with a timeout of 0, nothing more (SL_TIMEDOUT); otherwise wait on ev until
 * ready() holds (its status) or the timeout passes (SL_TIMEDOUT). The first
 * try is the caller's, before the clock is read, and the callers of this
 * (await_op, await_recv_n) are out of line: a call whose first try succeeds
 * reads no clock and sets up no frame for the wait. */
static inline sl_status await_wait(sl_event *ev, sl__ready_fn ready, chan_wait *w,
                                   uint64_t timeout_ns, unsigned spin)
{
    if (timeout_ns == 0)
        return SL_TIMEDOUT;
    /* A shared channel's waiter counts itself in its process's record too. */
    if (sl__chan_adapter(w->ch->flavor)->shared)
        sl__park_account = sl__shm_park_account(w->ch, ev);
    sl__futex_word key;
    sl__event_set one = {(sl_event *const[1]){ev}, &key, 1, sl__chan_unwoken_of(w->ch, ev)};
    sl__chan_retrying = true;
    sl_status st = sl__chan_await(&one, ready, w, sl_deadline_after(timeout_ns), spin, chan_next);
    sl__chan_retrying = false;
    sl__park_account = NULL;
    return st == SL_OK ? w->st : SL_TIMEDOUT;
}

static __attribute__((noinline)) sl_status await_op(sl_event *ev, sl__ready_fn ready,
                                                    sl_chan *ch, const void *elem, void *out,
                                                    uint64_t timeout_ns, unsigned spin)
{
    const flavor_adapter *a = sl__chan_adapter(ch->flavor);
    if (a->await) /* its waiters post offers (rendezvous) */
        return a->await(ch, elem != NULL, elem ? (void *)elem : out, timeout_ns);
    chan_wait w = {.ch = ch, .elem = elem, .out = out};
    return await_wait(ev, ready, &w, timeout_ns, spin);
}

/* The receive streak: how many blocking receives in a row this thread
 * answered at their first try (saturating at SL_RECV_STREAK); a select
 * answered at its first round by a receive case counts as one too. A
 * receive or a select with a receive case that finds nothing after a full
 * streak has caught up with a stream: its spin looks first after
 * SL_SPIN_PATIENT_START pauses, not one, so the producer writes a batch
 * before the receiver reads its lines again (each early look takes the
 * producer's tail or cell line, which the producer's next write must take
 * back: a line transfer more per message, the "consumer that keeps up" of
 * docs/performance.md). A receiver in a ping-pong finds the channel empty
 * at every first try, so its streak stays 0 and its first look still comes
 * after one pause. Per thread, not per channel: a thread whose receives
 * keep finding messages is in a stream, whichever channels they come from. */
_Thread_local unsigned sl__recv_streak __attribute__((tls_model("initial-exec")));

unsigned sl__recv_streak_spin(void)
{
    unsigned spin = sl__recv_streak >= SL_RECV_STREAK ? SL__AWAIT_SPIN | SL__AWAIT_PATIENT
                                                      : SL__AWAIT_SPIN;
    sl__recv_streak = 0;
    return spin;
}

SL_API sl_status sl_chan_send_for(sl_chan *ch, const void *elem, uint64_t timeout_ns)
{
    if (!ch || !elem)
        return SL_EINVAL;
    sl_status st = sl__chan_try_send_once(ch, elem);
    if (is_final(st))
        return st;
    return await_op(&ch->not_full, send_ready, ch, elem, NULL, timeout_ns, SL__AWAIT_SPIN);
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
    /* A pointer means nothing in another process: a shared channel refuses. */
    if (!ch || !pp || ch->elem_size != sizeof(void *) || sl__chan_is_shared(ch))
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

SL_API sl_status sl_chan_recv_for(sl_chan *ch, void *out, uint64_t timeout_ns)
{
    if (!ch || !out)
        return SL_EINVAL;
#ifdef SL_MUTANT_CHANFD_FIRST_TRY_SKIPS
    sl__chan_retrying = true; /* planted bug: the call's first try counts as a retry */
#endif
    sl_status st = sl__chan_try_recv(ch, out);
    if (is_final(st)) {
        sl__recv_streak_hit();
        return st;
    }
    return await_op(recv_event(ch), recv_ready, ch, NULL, out, timeout_ns,
                    sl__recv_streak_spin());
}

SL_API sl_status sl_chan_recv(sl_chan *ch, void *out)
{
    return sl_chan_recv_for(ch, out, SL_FOREVER);
}

static bool recv_n_ready(void *ctx)
{
    chan_wait *w = ctx;
    w->st = sl__chan_try_recv_n(w->ch, w->out, w->n, &w->got);
    return is_final(w->st);
}

/* The wait of a batch receive whose first try found nothing (await_op's,
 * with the batch's count). */
static __attribute__((noinline)) sl_status await_recv_n(sl_chan *ch, void *out, size_t n,
                                                        uint64_t timeout_ns, size_t *got)
{
    const flavor_adapter *a = sl__chan_adapter(ch->flavor);
    if (a->await) { /* one message through the flavour's wait, then whatever else is there */
        sl_status st = a->await(ch, false, out, timeout_ns);
        *got = st != SL_OK ? 0 : 1 + sl_chan_try_recv_n(ch, (unsigned char *)out + ch->elem_size,
                                                         n - 1);
        return st;
    }
    chan_wait w = {.ch = ch, .out = out, .n = n};
    sl_status st = await_wait(recv_event(ch), recv_n_ready, &w, timeout_ns, SL__AWAIT_SPIN);
    *got = st == SL_OK ? w.got : 0;
    return st;
}

SL_API sl_status sl_chan_recv_n_for(sl_chan *ch, void *out, size_t n, uint64_t timeout_ns,
                                    size_t *got)
{
    if (got)
        *got = 0;
    if (!ch || !out || !got || !sl__chan_batch_fits(ch, n))
        return SL_EINVAL;
    sl_status st = sl__chan_try_recv_n(ch, out, n, got);
    if (is_final(st))
        return st;
#ifdef SL_MUTANT_RECV_N_EMPTY_AT_ZERO
    if (timeout_ns == 0)
        return SL_EMPTY; /* planted bug: a zero timeout answers SL_EMPTY, not SL_TIMEDOUT */
#endif
    return await_recv_n(ch, out, n, timeout_ns, got);
}

SL_API sl_status sl_chan_recv_n(sl_chan *ch, void *out, size_t n, size_t *got)
{
    return sl_chan_recv_n_for(ch, out, n, SL_FOREVER, got);
}
