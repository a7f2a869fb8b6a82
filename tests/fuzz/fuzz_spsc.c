/*
 * tests/fuzz/fuzz_spsc.c — libFuzzer target: SL_SPSC against the sequential
 * model (fuzz_common.h): the raw ring (sl_spsc_*, including the inline fast
 * paths and counters started near the wrap) or the channel (sl_chan_*).
 * Pushes given an evicted buffer (R_PUSH_EV), and every other pop, go through
 * the out-of-line entry points instead (fuzz_spsc_ool.c).
 */
#include <sluice/spsc.h>

#include "fuzz_common.h"

sl_status fz_spsc_try_push_ool(sl_spsc *q, const void *elem);
sl_status fz_spsc_try_pop_ool(sl_spsc *q, void *out);
static unsigned spsc_pops;

static void *spsc_create(size_t es, size_t cap, uint64_t start, sl_status *st)
{
    sl_spsc *q = fz_aligned(sizeof *q);
    spsc_pops = 0;
    *st = sl__spsc_init_at(q, es, cap, start);
    if (*st != SL_OK) {
        free(q);
        return NULL;
    }
    return q;
}

static void spsc_destroy(void *q)
{
    sl_spsc_destroy(q);
    free(q);
}

static sl_status spsc_push(void *q, const void *e, void *ev)
{
    return ev ? fz_spsc_try_push_ool(q, e) : sl_spsc_try_push(q, e);
}
static sl_status spsc_pop(void *q, void *out)
{
    return spsc_pops++ & 1 ? fz_spsc_try_pop_ool(q, out) : sl_spsc_try_pop(q, out);
}
static size_t spsc_push_n(void *q, const void *e, size_t n) { return sl_spsc_push_n(q, e, n); }
static size_t spsc_pop_n(void *q, void *out, size_t n) { return sl_spsc_pop_n(q, out, n); }
static size_t spsc_len(const void *q) { return sl_spsc_len(q); }
static size_t spsc_cap(const void *q) { return sl_spsc_cap(q); }

static void spsc_bad_init(size_t es, uint8_t v)
{
    sl_spsc *q = fz_aligned(sizeof *q);
    sl_status st;
    switch (v % 5) {
    case 0: st = sl_spsc_init(NULL, es, 4); break;
    case 1: st = sl_spsc_init(q, 0, 4); break;
    case 2: st = sl_spsc_init(q, SL_ELEM_MAX + 1, 4); break;
    case 3: st = sl_spsc_init(q, es, 0); break;
    default: st = sl_spsc_init(q, es, v & 1 ? SIZE_MAX : SIZE_MAX / es); break;
    }
    FZ_CHECK(st == SL_EINVAL, "sl_spsc_init bad #%u: %s, want SL_EINVAL", v % 5, fz_st(st));
    free(q);
}

static const fz_raw_ops spsc_ops = {
    "sl_spsc", FZ_BOUNDED, spsc_create, spsc_destroy, spsc_push,    spsc_pop,
    spsc_push_n, spsc_pop_n, spsc_len,   spsc_cap,     spsc_bad_init,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fz_main(SL_SPSC, &spsc_ops, data, size);
}
