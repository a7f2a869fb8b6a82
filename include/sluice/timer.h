/*
 * sluice/timer.h — timer channels: after, tick and never.
 *
 * A timer channel is a channel (sluice/chan.h) of the SL_TIMER flavour that
 * nobody sends into: its messages come from the clock. Each message is a
 * uint64_t (elem_size 8), the CLOCK_MONOTONIC instant in nanoseconds (the
 * clock of sl_now_ns) at which that fire was due — its scheduled instant,
 * not the (later) instant it was received. Receive it with every receive
 * form of the façade (sl_chan_recv, sl_chan_try_recv, sl_chan_recv_for and
 * the batch forms sl_chan_try_recv_n, sl_chan_recv_n, sl_chan_recv_n_for,
 * which take one message at a time from a timer, as at most one is pending)
 * and use it as a receive case of sl_select, so that a
 * loop can wait on work, a ticker and a deadline at once:
 *
 *   sl_chan *tick, *deadline;
 *   sl_chan_tick(&tick, 100 * 1000000ull);        // every 100 ms
 *   sl_chan_after(&deadline, 5 * 1000000000ull);  // once, in 5 s
 *   sl_select_case c[] = {{work, SL_SEL_RECV, &job}, {tick, SL_SEL_RECV, &t},
 *                         {deadline, SL_SEL_RECV, &t}};
 *
 *   sl_chan_after(d)   one message, due d ns after the call; after it has
 *                      been received the channel stays empty for ever (a
 *                      second receive waits until its own timeout or a close,
 *                      as Go's time.After and crossbeam's after).
 *   sl_chan_tick(p)    a message every p ns, first due p ns after the call.
 *                      Missed ticks are coalesced, never queued: at most one
 *                      message is pending; it carries the instant of the
 *                      oldest tick not yet received, and the next one is due
 *                      at the first instant of the grid (start + k * p) after
 *                      the receive — a receiver back from a long pause gets
 *                      one message, then the ticker's normal rhythm, with no
 *                      drift (as Go's Ticker; crossbeam's tick drifts).
 *   sl_chan_never()    never a message (a select case that is never ready,
 *                      e.g. an optional deadline left off).
 *
 * No thread, signal or system timer per timer: a receive reads the clock,
 * and a receiver or selector that waits asks the kernel to wake it at the
 * next fire of the timers it waits on (the kernel adds its timer slack, 50 us
 * by default, which prctl(PR_SET_TIMERSLACK) lowers, and any scheduling
 * delay). Every fire is received by exactly one receiver,
 * and a timer may have any number of receivers (any threads).
 *
 * The façade's rules, for this flavour: sends of every form return
 * SL_EINVAL and consume nothing (sl_chan_try_send_n returns 0); sl_chan_close
 * stops the timer — receivers then get SL_CLOSED, even for a fire already
 * due; sl_chan_len is 1 while a fire is due, else 0; sl_chan_cap is 1;
 * sl_chan_free frees it (nothing to drop). Creating one through sl_chan_new
 * (flavor SL_TIMER) returns SL_EINVAL: use the constructors below.
 *
 * Progress: sl_chan_try_recv on a timer is lock-free (one clock read and a
 * compare-and-swap that fails only when another receiver took a fire). A
 * receive carries no data from another thread, so it orders nothing beyond
 * the fire's own uniqueness.
 */
#ifndef SLUICE_TIMER_H
#define SLUICE_TIMER_H

#include "sluice/base.h"
#include "sluice/chan.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

/* Creates a one-shot timer channel whose one message is due delay_ns after
 * the call (0: due at once; SL_FOREVER: never). Returns SL_OK and sets *out;
 * SL_EINVAL for NULL out; SL_ENOMEM (*out untouched). */
SL_API sl_status sl_chan_after(sl_chan **out, uint64_t delay_ns);

/* Creates a ticker channel: a message due every period_ns, the first
 * period_ns after the call; missed ticks coalesced (header comment). Returns
 * SL_OK and sets *out; SL_EINVAL for NULL out or period_ns 0; SL_ENOMEM. */
SL_API sl_status sl_chan_tick(sl_chan **out, uint64_t period_ns);

/* Creates a timer channel that never has a message. Returns SL_OK and sets
 * *out; SL_EINVAL for NULL out; SL_ENOMEM. */
SL_API sl_status sl_chan_never(sl_chan **out);

SL_END_DECLS

/*
 * The typed form: sl_timer_chan is SL_CHAN_TYPED(sl_timer_chan, uint64_t), so
 * sl_timer_chan_recv(t, &at) and the other receive forms take a uint64_t *;
 * sl_timer_chan_after / _tick / _never create one (their parameters are
 * named sl_*_, as in SL_CHAN_TYPED and for the same reasons).
 */
SL_CHAN_TYPED(sl_timer_chan, uint64_t);

SL_TYPED_FN sl_status sl_timer_chan_after(sl_timer_chan **sl_out_, uint64_t sl_delay_ns_)
{
    return sl_chan_after((sl_chan **)(void *)sl_out_, sl_delay_ns_);
}

SL_TYPED_FN sl_status sl_timer_chan_tick(sl_timer_chan **sl_out_, uint64_t sl_period_ns_)
{
    return sl_chan_tick((sl_chan **)(void *)sl_out_, sl_period_ns_);
}

SL_TYPED_FN sl_status sl_timer_chan_never(sl_timer_chan **sl_out_)
{
    return sl_chan_never((sl_chan **)(void *)sl_out_);
}

#endif /* SLUICE_TIMER_H */
