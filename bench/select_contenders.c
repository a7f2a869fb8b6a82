/*
 * select_contenders.c — sluice's select behind the common interface: the
 * contender's queue is a pair of SL_MPMC channels of the run's capacity,
 * its push a select of a send over both, its sel_pop a select of a receive
 * over both (the "select on both sides" shape of crossbeam-channel's own
 * benchmarks). Twice: the fair sl_select and sl_select_biased, which tries
 * the first channel first and so leaves the second mostly idle.
 *
 * A status other than the ones select documents for the situation is a
 * library bug: the adapter aborts naming it.
 */
#include <stdlib.h>

#include "peers/peers.h"
#include "sluice/chan.h"
#include "sluice/select.h"

typedef sl_status (*select_fn)(sl_select_case *, size_t, uint64_t, size_t *);

typedef struct chan_pair {
    sl_chan *ch[2];
} chan_pair;

static void *pair_create(size_t capacity, size_t elem_size)
{
    chan_pair *p = calloc(1, sizeof(*p));
    sl_chan_opts o = { .flavor = SL_MPMC, .elem_size = elem_size, .capacity = capacity };
    if (p && sl_chan_new(&p->ch[0], &o) == SL_OK && sl_chan_new(&p->ch[1], &o) == SL_OK)
        return p;
    if (p && p->ch[0])
        sl_chan_free(p->ch[0]);
    free(p);
    return NULL;
}

static void pair_destroy(void *q)
{
    chan_pair *p = q;
    sl_chan_free(p->ch[0]);
    sl_chan_free(p->ch[1]);
    free(p);
}

/* One select over the pair: the case that ran (0 or 1), or -1 when nothing
 * was ready within timeout (only with timeout 0). */
static int pair_select(const char *who, select_fn fn, chan_pair *p, sl_select_op op,
                       void *buf, uint64_t timeout)
{
    sl_select_case c[2] = { { p->ch[0], op, buf }, { p->ch[1], op, buf } };
    size_t index = 2;
    sl_status s = fn(c, 2, timeout, &index);
    if (s == SL_TIMEDOUT && timeout == 0)
        return -1;
    if (s != SL_OK || index > 1)
        slb_die(who, "select returned %s (case %zu)", sl_status_str(s), index);
    return (int)index;
}

#define SELECT_ADAPTER(tag, fn, nm)                                                      \
    static bool tag##_push(void *q, void *h, const void *m)                              \
    {                                                                                    \
        (void)h;                                                                         \
        return pair_select(nm, fn, q, SL_SEL_SEND, (void *)m, SL_FOREVER) >= 0;          \
    }                                                                                    \
    static unsigned tag##_pop(void *q, void *h, void *m, bool block)                     \
    {                                                                                    \
        (void)h;                                                                         \
        return (unsigned)(pair_select(nm, fn, q, SL_SEL_RECV, m, block ? SL_FOREVER : 0) \
                          + 1);                                                          \
    }                                                                                    \
    static const slb_ops tag = {                                                         \
        .name = nm, .peer = "sluice", .kind = SLB_SELECTING,                             \
        .flags = SLB_FIFO | SLB_OURS, .flavor = 2,                                       \
        .note = "two SL_MPMC channels, each exactly the capacity",                       \
        .create = pair_create, .destroy = pair_destroy, .push = tag##_push,              \
        .sel_pop = tag##_pop,                                                            \
    }

SELECT_ADAPTER(fair, sl_select, "sl_select");
SELECT_ADAPTER(biased, sl_select_biased, "sl_select_biased");

const slb_ops *const *slb_peers_sluice_select(void)
{
    static const slb_ops *const list[] = { &fair, &biased, NULL };
    return list;
}
