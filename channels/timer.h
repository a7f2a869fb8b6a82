/*
 * channels/timer.h — the timer behind SL_TIMER channels (internal, not
 * installed): the next instant a message is due, and the period after it.
 *
 * A timer holds no messages. Its one message is computed at receive time
 * from the clock (sl__now_ns, the system layer, so tests can drive it): due
 * once the clock has reached `next`, and taken by whichever receiver swings
 * `next` forward first (a compare-and-swap), so every fire goes to exactly
 * one receiver. After a one-shot fire `next` becomes SL_FOREVER (never
 * again); a ticker's moves to the first instant of its grid (first + k *
 * period) after the clock, so ticks missed while nobody received are
 * coalesced into the one received, never queued.
 */
#ifndef SLUICE_CHANNELS_TIMER_H
#define SLUICE_CHANNELS_TIMER_H

#include "sluice/base.h"
#include "sluice/status.h"

typedef struct sl_timer_state {
    SL_ATOMIC(uint64_t) next; /* CLOCK_MONOTONIC ns of the next fire; SL_FOREVER: none */
    uint64_t period;          /* 0: fires once (after, never) */
} sl_timer_state;

/* Arms t to fire first at `first` (SL_FOREVER: never) and then every
 * `period` ns (0: once). Before the channel is shared. */
void sl__timer_arm(sl_timer_state *t, uint64_t first, uint64_t period);

/* Takes the due fire, if any: SL_OK with its scheduled instant in *out (the
 * oldest fire not yet received), or SL_EMPTY, also once `closed` (the
 * channel's flag) is set. Lock-free: a failed compare-and-swap means
 * another receiver took a fire. A take linearizes at its last load of
 * `closed`, which follows the clock read that found the fire due: no fire
 * scheduled after a close is ever taken. */
sl_status sl__timer_take(sl_timer_state *t, const SL_ATOMIC(uint32_t) *closed, uint64_t *out);

/* The instant of the next fire (SL_FOREVER: none), a snapshot. */
uint64_t sl__timer_next(const sl_timer_state *t);

#endif /* SLUICE_CHANNELS_TIMER_H */
