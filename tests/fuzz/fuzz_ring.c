/*
 * tests/fuzz/fuzz_ring.c — libFuzzer target: SL_RING against the sequential
 * model (fuzz_common.h): the raw overwrite ring (sl_ring_*: a push into a full
 * ring returns SL_EVICTED and hands over exactly the oldest message) or the
 * channel (sl_chan_*: displaced messages go to the drop function, or to the
 * caller with sl_chan_send_evict).
 */
#include <sluice/ring.h>

#include "fuzz_common.h"

static void *ring_create(size_t es, size_t cap, uint64_t start, sl_status *st)
{
    sl_ring *r = fz_aligned(sizeof *r);
    *st = sl__ring_init_at(r, es, cap, start);
    if (*st != SL_OK) {
        free(r);
        return NULL;
    }
    return r;
}

static void ring_destroy(void *r)
{
    sl_ring_destroy(r);
    free(r);
}

static sl_status ring_push(void *r, const void *e, void *ev) { return sl_ring_try_push(r, e, ev); }
static sl_status ring_pop(void *r, void *out) { return sl_ring_try_pop(r, out); }
static size_t ring_pop_n(void *r, void *out, size_t n) { return sl_ring_pop_n(r, out, n); }
static size_t ring_len(const void *r) { return sl_ring_len(r); }
static size_t ring_cap(const void *r) { return sl_ring_cap(r); }

static void ring_bad_init(size_t es, uint8_t v)
{
    sl_ring *r = fz_aligned(sizeof *r);
    sl_status st;
    switch (v % 5) {
    case 0: st = sl_ring_init(NULL, es, 4); break;
    case 1: st = sl_ring_init(r, 0, 4); break;
    case 2: st = sl_ring_init(r, SL_ELEM_MAX + 1, 4); break;
    case 3: st = sl_ring_init(r, es, 0); break;
    default: st = sl_ring_init(r, es, v & 1 ? SIZE_MAX : SIZE_MAX / 2 + 1); break;
    }
    FZ_CHECK(st == SL_EINVAL, "sl_ring_init bad #%u: %s, want SL_EINVAL", v % 5, fz_st(st));
    free(r);
}

static const fz_raw_ops ring_ops = {
    "sl_ring", FZ_OVERWRITE, ring_create, ring_destroy, ring_push,    ring_pop,
    NULL,      ring_pop_n,   ring_len,    ring_cap,     ring_bad_init,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fz_main(SL_RING, &ring_ops, data, size);
}
