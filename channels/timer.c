/*
 * channels/timer.c — timer channels (SL_TIMER): the timer state behind them
 * (channels/timer.h) and the constructors sl_chan_after, sl_chan_tick and
 * sl_chan_never (sluice/timer.h).
 *
 * No thread and no system timer per timer: a timer channel is a channel of
 * the SL_TIMER flavour whose receive reads the clock and takes the fire that
 * is due (chan_flavors.h, timer_adapter). A receiver or selector that waits
 * for it bounds its sleep by the instant of the next fire (sl__chan_await in
 * chan_wait.c), so it wakes when the timer fires without anyone notifying it.
 */
#include "sluice/timer.h"
#include "timer.h"

#include "chan_impl.h"
#include "internal/sysops.h"
#include "internal/testing.h"
#ifdef SL_MUTANT_TIMER_TAKE_BY_STORE
#include "internal/spin.h"
#endif

void sl__timer_arm(sl_timer_state *t, uint64_t first, uint64_t period)
{
    /* Relaxed: the channel is not shared yet; handing it over orders this. */
    atomic_store_explicit(&t->next, first, memory_order_relaxed);
    t->period = period;
}

/* The instant after `due` (<= now) that a ticker fires next: the first point
 * of its grid due + k * period after now. SL_FOREVER once that overflows. */
static uint64_t next_on_grid(uint64_t due, uint64_t period, uint64_t now)
{
    uint64_t k = (now - due) / period + 1;
    if (k > (SL_FOREVER - 1 - due) / period)
        return SL_FOREVER;
    return due + k * period;
}

sl_status sl__timer_take(sl_timer_state *t, const SL_ATOMIC(uint32_t) *closed, uint64_t *out)
{
    /* Relaxed: a fire carries no data; the compare-and-swap alone decides
     * which receiver gets it. */
    uint64_t due = atomic_load_explicit(&t->next, memory_order_relaxed);
    uint64_t now = sl__now_ns();
    for (;;) {
        if (due == SL_FOREVER || due > now)
            return SL_EMPTY;
#ifdef SL_MUTANT_TIMER_BACKLOG
        /* Planted bug (docs/guarantees.md): missed ticks queue up. */
        uint64_t after = t->period ? due + t->period : SL_FOREVER;
        (void)next_on_grid;
#else
        uint64_t after = t->period ? next_on_grid(due, t->period, now) : SL_FOREVER;
#endif
        SL_FI(); /* due seen, not yet taken */
#ifndef SL_MUTANT_TIMER_CLOSE_UNCHECKED /* planted bug when defined: a close during the take is missed */
        /* After the clock read: a receive that checked `closed` before it
         * and then stalled until past a fire scheduled after a close took
         * that fire, after another receiver had seen SL_CLOSED (found by
         * review). Seq_cst: against close's exchange. */
        if (atomic_load_explicit(closed, memory_order_seq_cst))
            return SL_EMPTY;
#endif
        /* seq_cst, as every flavour's pop, though no notify follows a
         * timer's (no sender waits on it: room_made, chan.c); the order
         * against a close is the load of `closed` above. On failure `due`
         * is the fire another receiver left: look again. */
#ifdef SL_MUTANT_TIMER_TAKE_BY_STORE
        /* Planted bug: a plain store takes the fire; racing receivers both do. */
        sl_cpu_relax();
        atomic_store_explicit(&t->next, after, memory_order_seq_cst);
        *out = due;
        return SL_OK;
#endif
        if (atomic_compare_exchange_weak_explicit(&t->next, &due, after, memory_order_seq_cst,
                                                  memory_order_relaxed)) {
            *out = due;
            return SL_OK;
        }
    }
}

uint64_t sl__timer_next(const sl_timer_state *t)
{
    /* Relaxed: a snapshot for a wait's deadline or sl_chan_len. */
    return atomic_load_explicit(&t->next, memory_order_relaxed);
}

/* A timer channel whose first fire is `delay_ns` after now (SL_FOREVER:
 * never) and then every `period` ns (0: once). */
static sl_status timer_new(sl_chan **out, uint64_t delay_ns, uint64_t period)
{
    if (!out)
        return SL_EINVAL;
    sl_chan_opts o = {.flavor = SL_TIMER, .elem_size = sizeof(uint64_t), .capacity = 1};
    sl_chan *ch;
    sl_status st = sl__chan_new_at(&ch, &o, 0);
    if (st != SL_OK)
        return st;
    /* The clock is read after the allocation: the fire is no earlier than
     * delay_ns after the call began. */
    sl__timer_arm(&ch->q.timer, sl_deadline_after(delay_ns), period);
    *out = ch;
    return SL_OK;
}

SL_API sl_status sl_chan_after(sl_chan **out, uint64_t delay_ns)
{
    return timer_new(out, delay_ns, 0);
}

SL_API sl_status sl_chan_tick(sl_chan **out, uint64_t period_ns)
{
    if (period_ns == 0)
        return SL_EINVAL;
    return timer_new(out, period_ns, period_ns);
}

SL_API sl_status sl_chan_never(sl_chan **out)
{
    return timer_new(out, SL_FOREVER, 0);
}
