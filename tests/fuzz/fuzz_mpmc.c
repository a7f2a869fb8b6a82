/*
 * tests/fuzz/fuzz_mpmc.c — libFuzzer target: SL_MPMC against the sequential
 * model (fuzz_common.h): the raw queue (sl_mpmc_*, counters optionally
 * started near the wrap) or the channel (sl_chan_*).
 */
#include <sluice/mpmc.h>

#include "fuzz_common.h"

static void *mpmc_create(size_t es, size_t cap, uint64_t start, sl_status *st)
{
    sl_mpmc *q = fz_aligned(sizeof *q);
    *st = sl__mpmc_init_at(q, es, cap, start);
    if (*st != SL_OK) {
        free(q);
        return NULL;
    }
    return q;
}

static void mpmc_destroy(void *q)
{
    sl_mpmc_destroy(q);
    free(q);
}

static sl_status mpmc_push(void *q, const void *e, void *ev)
{
    (void)ev;
    return sl_mpmc_try_push(q, e);
}
static sl_status mpmc_pop(void *q, void *out) { return sl_mpmc_try_pop(q, out); }
static size_t mpmc_push_n(void *q, const void *e, size_t n) { return sl_mpmc_push_n(q, e, n); }
static size_t mpmc_pop_n(void *q, void *out, size_t n) { return sl_mpmc_pop_n(q, out, n); }
static size_t mpmc_len(const void *q) { return sl_mpmc_len(q); }
static size_t mpmc_cap(const void *q) { return sl_mpmc_cap(q); }

static void mpmc_bad_init(size_t es, uint8_t v)
{
    sl_mpmc *q = fz_aligned(sizeof *q);
    sl_status st;
    switch (v % 5) {
    case 0: st = sl_mpmc_init(NULL, es, 4); break;
    case 1: st = sl_mpmc_init(q, 0, 4); break;
    case 2: st = sl_mpmc_init(q, SL_ELEM_MAX + 1, 4); break;
    case 3: st = sl_mpmc_init(q, es, 0); break;
    default: st = sl_mpmc_init(q, es, v & 1 ? SIZE_MAX : ((size_t)1 << 40) + 1); break;
    }
    FZ_CHECK(st == SL_EINVAL, "sl_mpmc_init bad #%u: %s, want SL_EINVAL", v % 5, fz_st(st));
    free(q);
}

static const fz_raw_ops mpmc_ops = {
    "sl_mpmc", FZ_BOUNDED, mpmc_create, mpmc_destroy, mpmc_push,    mpmc_pop,
    mpmc_push_n, mpmc_pop_n, mpmc_len,   mpmc_cap,     mpmc_bad_init,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fz_main(SL_MPMC, &mpmc_ops, data, size);
}
