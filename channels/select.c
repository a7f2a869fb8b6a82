/*
 * channels/select.c — select over channels of any flavour.
 *
 * Fairness: each round tries the cases in a fresh uniformly random order and
 * performs the first that is ready; if readiness does not change during the
 * round, every ready case is first with equal probability.
 *
 * Sleeping: the selector registers on the process-wide bell (prepare), then
 * adds itself to each case's channel `selectors` count, fences, and tries the
 * cases again. A channel's successful send, receive or close is a seq_cst
 * RMW (or is fenced) and is followed by a seq_cst load of `selectors`; if it
 * reads non-zero it rings the bell. The same Dekker argument as the
 * eventcount's (sluice/park.h) shows that either the re-check sees the change
 * or the bell wakes the selector.
 */
#include "sluice/select.h"

#include <stdlib.h>

#include "chan_impl.h"
#include "internal/spin.h"
#include "internal/util.h"

/* Cases up to this many need no allocation for the shuffle. */
#define SELECT_STACK_CASES 64

static _Thread_local uint64_t select_rng;

static uint64_t rng_next(void)
{
    if (select_rng == 0) /* first use on this thread: seed from the clock and the TLS address */
        select_rng = (sl_now_ns() ^ (uint64_t)(uintptr_t)&select_rng ^ 0x9E3779B97F4A7C15ull) | 1;
    return sl__xorshift64s(&select_rng);
}

static bool cases_valid(const sl_select_case *cases, size_t n)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (cases[i].op != SL_SEL_SEND && cases[i].op != SL_SEL_RECV)
            return false;
        if (!cases[i].ch)
            continue;
        if (!cases[i].buf)
            return false;
        any = true;
    }
    return any;
}

/* One round in random order. Returns the first final status (setting *index)
 * or SL_TIMEDOUT if no case was ready. */
static sl_status poll_round(sl_select_case *cases, size_t n, size_t *order, size_t *index)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n - 1; i > 0; i--) { /* Fisher–Yates */
        size_t j = (size_t)(rng_next() % (i + 1));
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t k = 0; k < n; k++) {
        sl_select_case *c = &cases[order[k]];
        if (!c->ch)
            continue;
        sl_status st = c->op == SL_SEL_SEND ? sl__chan_try_send(c->ch, c->buf)
                                            : sl__chan_try_recv(c->ch, c->buf);
        if (st != SL_FULL && st != SL_EMPTY) {
            *index = order[k];
            return st;
        }
    }
    return SL_TIMEDOUT;
}

static void set_registered(sl_select_case *cases, size_t n, bool on)
{
    for (size_t i = 0; i < n; i++) {
        if (!cases[i].ch)
            continue;
        if (on)
            atomic_fetch_add_explicit(&cases[i].ch->selectors, 1u, memory_order_seq_cst);
        else
            atomic_fetch_sub_explicit(&cases[i].ch->selectors, 1u, memory_order_seq_cst);
    }
    SL_FI();
    /* The registrations above before the re-check that follows (Dekker with
     * the channels' state change and selectors load; see sluice/park.h). */
    sl_event_heavy_fence();
}

static sl_status select_wait(sl_select_case *cases, size_t n, size_t *order, uint64_t deadline,
                             size_t *index)
{
    sl_status st = SL_TIMEDOUT;
    for (unsigned i = 0; i < SL_SPIN_TRIES / 4 && st == SL_TIMEDOUT; i++) {
        for (unsigned k = 0; k < SL_SPIN_RELAX_MAX; k++)
            sl_cpu_relax();
        st = poll_round(cases, n, order, index);
    }
    if (st != SL_TIMEDOUT)
        return st;
    bool registered = false;
    for (;;) {
        uint32_t key = sl_event_prepare(&sl__select_bell);
        if (!registered) {
            set_registered(cases, n, true);
            registered = true;
        }
        st = poll_round(cases, n, order, index);
        if (st != SL_TIMEDOUT) {
            sl_event_cancel(&sl__select_bell);
            break;
        }
        sl_status w = sl_event_wait(&sl__select_bell, key, deadline);
        st = poll_round(cases, n, order, index);
        if (st != SL_TIMEDOUT || w == SL_TIMEDOUT)
            break;
    }
    set_registered(cases, n, false);
    return st;
}

SL_API sl_status sl_select(sl_select_case *cases, size_t n, uint64_t timeout_ns, size_t *index)
{
    if (!cases || !index || n == 0 || !cases_valid(cases, n))
        return SL_EINVAL;
    size_t stack_order[SELECT_STACK_CASES];
    size_t *order = n <= SELECT_STACK_CASES ? stack_order : malloc(n * sizeof *order);
    if (!order)
        return SL_ENOMEM;
    sl_status st = poll_round(cases, n, order, index);
    if (st == SL_TIMEDOUT && timeout_ns != 0)
        st = select_wait(cases, n, order, sl_deadline_after(timeout_ns), index);
    if (order != stack_order)
        free(order);
    return st;
}
