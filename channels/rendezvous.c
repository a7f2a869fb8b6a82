/*
 * channels/rendezvous.c — rendezvous channels (capacity 0): the offers of
 * waiting threads, and their completion by a partner (channels/rendezvous.h).
 *
 * The protocol. A thread that must wait posts an offer under the channel's
 * lock, after looking (under the same lock) for an open offer of the other
 * side to complete instead, so two partners can never both post and miss
 * each other. A partner completes an offer, under the lock, by:
 *   1. compare-and-swap of the owner's claim word OPEN -> TAKEN(index)
 *      (seq_cst: the change the owner's wait re-checks, ordered before the
 *      wake that follows — the await protocol, internal/await.h);
 *   2. copying the message (into the owner's buffer, or out of it);
 *   3. unlinking the offer and waking the owner's eventcount (a select's
 *      owner is woken by the bell the façade rings after every success);
 * and releases the lock. The owner, once it sees its word taken, takes the
 * lock once: that acquire orders the copy before the owner's return and
 * proves the partner has finished touching the owner's offer, buffer and
 * eventcount (all on the owner's stack). An owner that gives up (timeout,
 * close) first swings its own word OPEN -> SELF: if that fails, a partner
 * took the offer and the operation happened.
 *
 * A select shares one claim word among its offers, so at most one is taken,
 * and holds its own word (SELF) while it runs a round over its cases: a
 * round that performs a case leaves the word held and withdraws the offers;
 * a round that finds nothing re-opens the word and then looks, under each
 * of its channels' locks, for a partner's offer that came while the word
 * was held (that partner saw SELF, skipped it, and posted); finding one it
 * rounds again.
 *
 * The lock is held for a bounded number of steps — a scan of the waiting
 * offers, one copy, one wake — and never across a wait (docs/guarantees.md,
 * "Rendezvous channels").
 */
#include "rendezvous.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan_impl.h"
#include "sluice/select.h"
#include "internal/await.h"
#include "internal/spin.h"
#include "internal/sysops.h"
#include "internal/testing.h"

/* ---- the channel's short lock --------------------------------------------- */

static void rdv_lock(sl_rdv *r)
{
    unsigned spins = 0;
    /* Acquire: the last holder's list changes and copies before ours. */
    while (atomic_exchange_explicit(&r->lock, 1u, memory_order_acquire) != 0) {
        /* Relaxed: only a hint to try the exchange again. */
        while (atomic_load_explicit(&r->lock, memory_order_relaxed) != 0) {
            if (++spins < SL_SPIN_RELAX_MAX)
                sl_cpu_relax();
            else
                sched_yield(); /* the holder may be preempted: let it run */
        }
    }
}

static void rdv_unlock(sl_rdv *r)
{
    /* Release: our list changes and copies before the next holder's. */
    atomic_store_explicit(&r->lock, 0u, memory_order_release);
}

/* ---- the lists (under the lock) ------------------------------------------ */

static void list_link(sl__rdv_list *l, sl__rdv_offer *o)
{
    o->next = NULL;
    o->prev = l->last;
    if (l->last)
        l->last->next = o;
    else
        l->first = o;
    l->last = o;
    o->linked = true;
}

static void list_unlink(sl__rdv_list *l, sl__rdv_offer *o)
{
    if (!o->linked)
        return;
    if (o->prev)
        o->prev->next = o->next;
    else
        l->first = o->next;
    if (o->next)
        o->next->prev = o->prev;
    else
        l->last = o->prev;
    o->linked = false;
}

void sl__rdv_init(sl_rdv *r)
{
    atomic_init(&r->lock, 0u);
    r->waiting[0] = (sl__rdv_list){NULL, NULL};
    r->waiting[1] = (sl__rdv_list){NULL, NULL};
}

static bool rdv_closed(const sl_chan *ch)
{
    /* Acquire: pairs with close's exchange (as chan.c's is_closed). */
    return atomic_load_explicit(&ch->closed, memory_order_acquire) != 0;
}

/* Under the lock: completes the oldest open offer of the other side that is
 * not `self`'s (a select never meets itself), steps 1–3 of the protocol.
 * `send`: the caller sends buf. false when no offer is open. */
static bool complete_one(sl_chan *ch, bool send, void *buf, const SL_ATOMIC(uint32_t) *self)
{
    sl__rdv_list *l = &ch->q.rdv.waiting[!send];
    for (sl__rdv_offer *o = l->first; o; o = o->next) {
        uint32_t open = SL__RDV_OPEN;
        if (o->claim == self)
            continue;
        SL_FI(); /* an open offer seen, not yet claimed */
        /* seq_cst: step 1 (above). Failure: taken by another partner, or
         * held by its owner; skip it. */
        if (!atomic_compare_exchange_strong_explicit(o->claim, &open, SL__RDV_TAKEN(o->index),
                                                     memory_order_seq_cst, memory_order_relaxed))
            continue;
        SL_FI(); /* taken, not yet copied */
        if (send)
            memcpy(o->buf, buf, ch->elem_size);
        else
            memcpy(buf, o->buf, ch->elem_size);
        list_unlink(l, o);
        if (o->ev)
            sl_event_notify_all(o->ev); /* its owner alone waits there */
        return true;
    }
    return false;
}

/* One try: complete a partner's offer, unless ch is closed. */
static sl_status rdv_try(sl_chan *ch, bool send, void *buf)
{
    sl_rdv *r = &ch->q.rdv;
    SL_FI(); /* a try, before the lock */
    rdv_lock(r);
    /* A close ends all matching: after it no offer is completed, so a sender
     * still waiting returns SL_CLOSED with its message. */
    bool closed = rdv_closed(ch);
    bool done = !closed && complete_one(ch, send, buf, NULL);
    rdv_unlock(r);
    if (done)
        return SL_OK;
    /* A receive's SL_EMPTY on a closed channel becomes the façade's verdict. */
    return !send ? SL_EMPTY : closed ? SL_CLOSED : SL_FULL;
}

sl_status sl__rdv_give(sl_chan *ch, const void *elem) { return rdv_try(ch, true, (void *)elem); }

sl_status sl__rdv_take(sl_chan *ch, void *out) { return rdv_try(ch, false, out); }

/* After an offer was linked or a select's offer completed: a selecting
 * thread may wait for it. The light fence pairs with the selector's heavy
 * one after its registration (select.c): our change before the load of
 * `selectors`, their registration before their look. */
static void rdv_ring(sl_chan *ch)
{
    sl_event_fence();
    sl__chan_ring_selectors(ch, SL__READY_BOTH);
}

sl_status sl__rdv_send(sl_chan *ch, const void *elem)
{
    sl_status st = sl__rdv_give(ch, elem);
    if (st == SL_OK)
        rdv_ring(ch); /* a select whose offer we completed sleeps on the bell */
    return st;
}

/* A waiting thread's offer onto ch, unless a partner's can be completed
 * now (SL_OK) or ch is closed (SL_CLOSED): SL_EMPTY when it was posted. */
static sl_status post(sl_chan *ch, sl__rdv_offer *o)
{
    sl_rdv *r = &ch->q.rdv;
    sl_status st = SL_EMPTY;
    rdv_lock(r);
    if (rdv_closed(ch))
        st = SL_CLOSED;
    else if (complete_one(ch, o->send, o->buf, o->claim))
        st = SL_OK;
    else
        list_link(&r->waiting[o->send], o);
    rdv_unlock(r);
    if (st != SL_CLOSED)
        rdv_ring(ch); /* a select's offer was completed, or ours is there to meet */
    return st;
}

/* The owner leaves: unlinks its offer, and takes the lock even if a partner
 * unlinked it, so that partner's copy and wake are over (the protocol). */
static void leave(sl__rdv_offer *o)
{
    sl_rdv *r = &o->ch->q.rdv;
    rdv_lock(r);
    list_unlink(&r->waiting[o->send], o);
    rdv_unlock(r);
}

/* Swings the owner's word OPEN -> SELF: false when a partner took it. */
static bool hold_own(SL_ATOMIC(uint32_t) *claim, uint32_t *seen)
{
    uint32_t c = SL__RDV_OPEN;
    /* seq_cst: in the total order with the partners' claims; acquire on
     * failure is enough for what it read (the copy is ordered by leave's
     * lock). */
    if (atomic_compare_exchange_strong_explicit(claim, &c, SL__RDV_SELF, memory_order_seq_cst,
                                                memory_order_acquire))
        c = SL__RDV_SELF;
    if (seen)
        *seen = c;
    return c == SL__RDV_SELF;
}

/* ---- the blocking and timed forms ------------------------------------------ */

static bool offer_settled(void *ctx)
{
    sl__rdv_offer *o = ctx;
    /* Acquire: the partner's claim; close's flag likewise. */
    return atomic_load_explicit(o->claim, memory_order_acquire) != SL__RDV_OPEN ||
           rdv_closed(o->ch);
}

sl_status sl__rdv_await(sl_chan *ch, bool send, void *buf, uint64_t timeout_ns)
{
    if (timeout_ns == 0)
        return SL_TIMEDOUT; /* the caller's try was the one attempt */
    uint64_t deadline = sl_deadline_after(timeout_ns);
    SL_ATOMIC(uint32_t) claim;
    atomic_init(&claim, SL__RDV_OPEN);
    sl_event ev;
    sl_event_init(&ev);
    sl__rdv_offer o = {.claim = &claim, .send = send, .buf = buf, .ev = &ev, .ch = ch};
    sl_status st = post(ch, &o);
    if (st != SL_EMPTY)
        return st;
    /* Woken by the partner that takes the offer, or by close (sl__rdv_close). */
    (void)sl__event_await(&ev, offer_settled, &o, deadline, SL__AWAIT_SPIN);
    bool kept = hold_own(&claim, NULL);
#ifdef SL_MUTANT_RDV_LEAVE_UNLOCKED
    if (!kept)
        return SL_OK; /* planted bug: returns before the partner's copy is known done */
#endif
    leave(&o);
    if (!kept)
        return SL_OK; /* a partner took it: the operation happened */
    return rdv_closed(ch) ? SL_CLOSED : SL_TIMEDOUT;
}

void sl__rdv_close(sl_chan *ch)
{
    sl_rdv *r = &ch->q.rdv;
    rdv_lock(r);
    for (int side = 0; side < 2; side++)
        for (sl__rdv_offer *o = r->waiting[side].first; o; o = o->next)
            if (o->ev)
                sl_event_notify_all(o->ev); /* selects: the façade rings the bell */
    rdv_unlock(r);
}

/* ---- select ----------------------------------------------------------------- */

static bool is_rdv_case(const sl_select_case *c)
{
    return c->ch && c->ch->flavor == SL__RENDEZVOUS;
}

sl_status sl__rdv_select_begin(sl__rdv_select *s, sl_select_case *cases, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += is_rdv_case(&cases[i]);
    if (m == 0)
        return SL_EMPTY;
    s->offers = m <= SL__RDV_SELECT_LOCAL ? s->local : sl__calloc(m, sizeof *s->offers);
    if (!s->offers)
        return SL_ENOMEM;
    /* Held until the first round has run: the offers are invisible until then. */
    atomic_init(&s->claim, SL__RDV_SELF);
    s->m = m;
    s->posted = false;
    for (size_t i = 0, k = 0; i < n; i++)
        if (is_rdv_case(&cases[i]))
            s->offers[k++] = (sl__rdv_offer){.claim = &s->claim, .index = (uint32_t)i,
                                             .send = cases[i].op == SL_SEL_SEND,
                                             .buf = cases[i].buf, .ch = cases[i].ch};
    return SL_OK;
}

static void post_all(sl__rdv_select *s)
{
    for (size_t k = 0; k < s->m; k++) {
        sl__rdv_offer *o = &s->offers[k];
        rdv_lock(&o->ch->q.rdv);
        list_link(&o->ch->q.rdv.waiting[o->send], o);
        rdv_unlock(&o->ch->q.rdv);
    }
    s->posted = true;
}

/* Whether a partner's open offer waits on one of s's channels, for the
 * other side of s's case there. */
static bool partner_waiting(sl__rdv_select *s)
{
    bool found = false;
    for (size_t k = 0; k < s->m && !found; k++) {
        sl__rdv_offer *me = &s->offers[k];
        sl_rdv *r = &me->ch->q.rdv;
        rdv_lock(r);
        for (sl__rdv_offer *o = r->waiting[!me->send].first; o && !found; o = o->next)
            /* Relaxed: a hint to round again; the round's CAS decides. */
            found = o->claim != &s->claim &&
                    atomic_load_explicit(o->claim, memory_order_relaxed) == SL__RDV_OPEN;
        rdv_unlock(r);
    }
    return found;
}

/* Between rounds that met a partner's offer but could not complete it (it
 * was held by its owner, itself rounding): two selects facing each other
 * back off so that one of them finds the other open. */
static void back_off(unsigned tries)
{
    if (tries < 6)
        for (unsigned i = 0; i < (1u << tries); i++)
            sl_cpu_relax();
    else
        sched_yield();
}

bool sl__rdv_select_ready(sl__rdv_select *s, bool (*poll)(void *), void *ctx)
{
    for (unsigned tries = 0;; tries++) {
#ifdef SL_MUTANT_RDV_SELECT_NO_HOLD
        /* Planted bug: the round runs with the offers open, so a partner may
         * take one while the round performs another case. */
        if (atomic_load_explicit(&s->claim, memory_order_acquire) >= SL__RDV_TAKEN(0))
            return true;
        atomic_store_explicit(&s->claim, SL__RDV_OPEN, memory_order_seq_cst);
        if (poll(ctx))
            return true;
#else
        if (!hold_own(&s->claim, NULL))
            return true; /* a partner took an offer */
        if (poll(ctx))
            return true; /* a case was performed; the word stays held */
#endif
        if (!s->posted)
            post_all(s);
        SL_FI(); /* held and posted, not yet re-opened */
        /* seq_cst: re-opened before the look at the partners' lists (each
         * under its lock), in the total order with their claims. */
        atomic_store_explicit(&s->claim, SL__RDV_OPEN, memory_order_seq_cst);
#ifdef SL_MUTANT_RDV_NO_RECHECK
        return false; /* planted bug: a partner that posted while the word was held sleeps too */
#endif
        if (!partner_waiting(s))
            return false;
        back_off(tries);
    }
}

bool sl__rdv_select_end(sl__rdv_select *s, size_t *index)
{
    uint32_t c;
    bool taken = !hold_own(&s->claim, &c);
    for (size_t k = 0; k < s->m; k++)
        leave(&s->offers[k]); /* also waits out the partner of a taken one */
    if (taken)
        *index = c - SL__RDV_TAKEN(0);
    if (s->offers != s->local)
        free(s->offers);
    return taken;
}
