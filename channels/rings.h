/*
 * channels/rings.h — internal entry points of the raw rings used by the
 * channel façade (not installed).
 */
#ifndef SLUICE_CHANNELS_RINGS_H
#define SLUICE_CHANNELS_RINGS_H

#include "sluice/list.h"
#include "sluice/mpmc.h"
#include "sluice/spsc.h"

/* Called with a pointer to each message's bytes inside the ring. */
typedef void (*sl_visit_fn)(void *elem, void *ctx);

/* Hands every message still inside to fn, oldest first, in place (no copy,
 * no allocation), and leaves the ring empty. No other thread may use q. */
void sl__spsc_drain(sl_spsc *q, sl_visit_fn fn, void *ctx);
void sl__mpmc_drain(sl_mpmc *q, sl_visit_fn fn, void *ctx);
/* fn may be NULL: the messages are only marked taken. */
void sl__list_drain(sl_list *q, sl_visit_fn fn, void *ctx);

#endif /* SLUICE_CHANNELS_RINGS_H */
