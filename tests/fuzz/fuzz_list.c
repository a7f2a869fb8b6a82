/*
 * tests/fuzz/fuzz_list.c — libFuzzer target: SL_LIST against the sequential
 * model (fuzz_common.h): the raw unbounded list (sl_list_*, across segment
 * boundaries: 32 .. 1024 slots per segment depending on elem_size) or the
 * channel (sl_chan_*). The model stops sending at FZ_LIST_MAX messages.
 */
#include <sluice/list.h>

#include "fuzz_common.h"

static void *list_create(size_t es, size_t cap, uint64_t start, sl_status *st)
{
    (void)cap, (void)start;
    sl_list *q = fz_aligned(sizeof *q);
    *st = sl_list_init(q, es);
    if (*st != SL_OK) {
        free(q);
        return NULL;
    }
    return q;
}

static void list_destroy(void *q)
{
    if (q)
        FZ_CHECK(sl_list_segments(q) >= 1, "sl_list_segments %zu before destroy",
                 sl_list_segments(q));
    sl_list_destroy(q);
    free(q);
}

static sl_status list_push(void *q, const void *e, void *ev)
{
    (void)ev;
    return sl_list_try_push(q, e);
}
static sl_status list_pop(void *q, void *out) { return sl_list_try_pop(q, out); }
static size_t list_push_n(void *q, const void *e, size_t n) { return sl_list_push_n(q, e, n); }
static size_t list_pop_n(void *q, void *out, size_t n) { return sl_list_pop_n(q, out, n); }
static size_t list_len(const void *q) { return sl_list_len(q); }

static void list_bad_init(size_t es, uint8_t v)
{
    sl_list *q = fz_aligned(sizeof *q);
    sl_status st;
    switch (v % 4) {
    case 0: st = sl_list_init(NULL, es); break;
    case 1: st = sl_list_init(q, 0); break;
    case 2: st = sl_list_init(q, SL_ELEM_MAX + 1); break;
    default:
        st = sl_list_init(q, SIZE_MAX);
        FZ_CHECK(sl_list_segments(NULL) == 0, "sl_list_segments(NULL)");
        break;
    }
    FZ_CHECK(st == SL_EINVAL, "sl_list_init bad #%u: %s, want SL_EINVAL", v % 4, fz_st(st));
    free(q);
}

static const fz_raw_ops list_ops = {
    "sl_list", FZ_UNBOUNDED, list_create, list_destroy, list_push,    list_pop,
    list_push_n, list_pop_n, list_len,     NULL,         list_bad_init,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fz_main(SL_LIST, &list_ops, data, size);
}
