/*
 * channels/testing.h — hooks for sluice's own tests (internal, not installed).
 *
 * Tests link the static library, where these hidden symbols are reachable.
 * They exist so that tests can start ring counters near wrap-around and count
 * the system calls made by the parking layer.
 */
#ifndef SLUICE_CHANNELS_TESTING_H
#define SLUICE_CHANNELS_TESTING_H

#include "sluice/spsc.h"
#include "sluice/mpmc.h"
#include "sluice/chan.h"
#include "sysops.h"

/* As sl_spsc_init / sl_mpmc_init / sl_chan_new, with both counters starting at
 * `start` instead of 0 (e.g. UINT64_MAX - 100 to cross the wrap early). */
sl_status sl__spsc_init_at(sl_spsc *q, size_t elem_size, size_t capacity, uint64_t start);
sl_status sl__mpmc_init_at(sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start);
sl_status sl__chan_new_at(sl_chan **out, const sl_chan_opts *opts, uint64_t start);

#endif /* SLUICE_CHANNELS_TESTING_H */
