/*
 * contenders.c — sluice's own contenders behind the common interface.
 *
 * The raw rings (sl_spsc, sl_mpmc) are what someone embedding sluice in an
 * executor would use; the channel is what applications use. The channel runs
 * twice per flavour: through try_send/try_recv with the driver spinning (to
 * compare with the lock-free peers) and through blocking send/recv (to compare
 * with the blocking peers), because those are different promises.
 *
 * A status other than the ones the headers document for the situation is a
 * library bug, never a benchmark condition: the adapter aborts naming it.
 */
#include <stdlib.h>

#include "contender.h"
#include "peers/peers.h"
#include "sluice/chan.h"
#include "sluice/mpmc.h"
#include "sluice/spsc.h"

/* ---- raw sl_spsc ------------------------------------------------------- */

static void *raw_spsc_create(size_t capacity, size_t elem_size)
{
    /* sl_spsc is cache-line aligned; malloc does not promise 64 bytes. */
    size_t bytes = (sizeof(sl_spsc) + SL_CACHELINE - 1) / SL_CACHELINE * SL_CACHELINE;
    sl_spsc *q = aligned_alloc(SL_CACHELINE, bytes);
    if (!q)
        return NULL;
    sl_status s = sl_spsc_init(q, elem_size, capacity);
    if (s != SL_OK) {
        free(q);
        return NULL;
    }
    return q;
}

static void raw_spsc_destroy(void *q)
{
    sl_spsc_destroy(q);
    free(q);
}

static bool raw_spsc_try_push(void *q, void *h, const void *m)
{
    (void)h;
    sl_status s = sl_spsc_try_push(q, m);
    if (s != SL_OK && s != SL_FULL)
        slb_die("sl_spsc", "sl_spsc_try_push returned %s", sl_status_str(s));
    return s == SL_OK;
}

static bool raw_spsc_try_pop(void *q, void *h, void *m)
{
    (void)h;
    sl_status s = sl_spsc_try_pop(q, m);
    if (s != SL_OK && s != SL_EMPTY)
        slb_die("sl_spsc", "sl_spsc_try_pop returned %s", sl_status_str(s));
    return s == SL_OK;
}

static size_t raw_spsc_push_n(void *q, void *h, const void *m, size_t n)
{
    (void)h;
    return sl_spsc_push_n(q, m, n);
}

static size_t raw_spsc_pop_n(void *q, void *h, void *m, size_t n)
{
    (void)h;
    return sl_spsc_pop_n(q, m, n);
}

/* ---- raw sl_mpmc ------------------------------------------------------- */

static void *raw_mpmc_create(size_t capacity, size_t elem_size)
{
    size_t bytes = (sizeof(sl_mpmc) + SL_CACHELINE - 1) / SL_CACHELINE * SL_CACHELINE;
    sl_mpmc *q = aligned_alloc(SL_CACHELINE, bytes);
    if (!q)
        return NULL;
    if (sl_mpmc_init(q, elem_size, capacity) != SL_OK) {
        free(q);
        return NULL;
    }
    return q;
}

static void raw_mpmc_destroy(void *q)
{
    sl_mpmc_destroy(q);
    free(q);
}

static bool raw_mpmc_try_push(void *q, void *h, const void *m)
{
    (void)h;
    sl_status s = sl_mpmc_try_push(q, m);
    if (s != SL_OK && s != SL_FULL)
        slb_die("sl_mpmc", "sl_mpmc_try_push returned %s", sl_status_str(s));
    return s == SL_OK;
}

static bool raw_mpmc_try_pop(void *q, void *h, void *m)
{
    (void)h;
    sl_status s = sl_mpmc_try_pop(q, m);
    if (s != SL_OK && s != SL_EMPTY)
        slb_die("sl_mpmc", "sl_mpmc_try_pop returned %s", sl_status_str(s));
    return s == SL_OK;
}

static size_t raw_mpmc_push_n(void *q, void *h, const void *m, size_t n)
{
    (void)h;
    return sl_mpmc_push_n(q, m, n);
}

static size_t raw_mpmc_pop_n(void *q, void *h, void *m, size_t n)
{
    (void)h;
    return sl_mpmc_pop_n(q, m, n);
}

/* ---- the channel ------------------------------------------------------- */

static void *chan_create(sl_flavor flavor, size_t capacity, size_t elem_size)
{
    sl_chan_opts o = { .flavor = flavor, .elem_size = elem_size, .capacity = capacity };
    sl_chan *ch = NULL;
    return sl_chan_new(&ch, &o) == SL_OK ? ch : NULL;
}

static void *chan_spsc_create(size_t capacity, size_t elem_size)
{
    return chan_create(SL_SPSC, capacity, elem_size);
}

static void *chan_mpmc_create(size_t capacity, size_t elem_size)
{
    return chan_create(SL_MPMC, capacity, elem_size);
}

static void chan_destroy(void *q)
{
    sl_chan_free(q);
}

static bool chan_try_push(void *q, void *h, const void *m)
{
    (void)h;
    sl_status s = sl_chan_try_send(q, m);
    if (s != SL_OK && s != SL_FULL)
        slb_die("sl_chan", "sl_chan_try_send returned %s", sl_status_str(s));
    return s == SL_OK;
}

static bool chan_try_pop(void *q, void *h, void *m)
{
    (void)h;
    sl_status s = sl_chan_try_recv(q, m);
    if (s != SL_OK && s != SL_EMPTY)
        slb_die("sl_chan", "sl_chan_try_recv returned %s", sl_status_str(s));
    return s == SL_OK;
}

static bool chan_push(void *q, void *h, const void *m)
{
    (void)h;
    sl_status s = sl_chan_send(q, m);
    if (s != SL_OK)
        slb_die("sl_chan", "sl_chan_send returned %s", sl_status_str(s));
    return true;
}

static bool chan_pop(void *q, void *h, void *m)
{
    (void)h;
    sl_status s = sl_chan_recv(q, m);
    if (s != SL_OK)
        slb_die("sl_chan", "sl_chan_recv returned %s", sl_status_str(s));
    return true;
}

static size_t chan_push_n(void *q, void *h, const void *m, size_t n)
{
    (void)h;
    return sl_chan_try_send_n(q, m, n);
}

static size_t chan_pop_n(void *q, void *h, void *m, size_t n)
{
    (void)h;
    return sl_chan_try_recv_n(q, m, n);
}

/* ---- the tables -------------------------------------------------------- */

#define EXACT "exactly the capacity"

static const slb_ops raw_spsc = {
    .name = "sl_spsc", .peer = "sluice", .kind = SLB_SPSC,
    .flags = SLB_FIFO | SLB_OURS | SLB_SINGLE, .note = EXACT,
    .create = raw_spsc_create, .destroy = raw_spsc_destroy,
    .try_push = raw_spsc_try_push, .try_pop = raw_spsc_try_pop,
    .push_n = raw_spsc_push_n, .pop_n = raw_spsc_pop_n,
};

static const slb_ops raw_mpmc = {
    .name = "sl_mpmc", .peer = "sluice", .kind = SLB_MPMC,
    .flags = SLB_FIFO | SLB_OURS, .note = EXACT,
    .create = raw_mpmc_create, .destroy = raw_mpmc_destroy,
    .try_push = raw_mpmc_try_push, .try_pop = raw_mpmc_try_pop,
    .push_n = raw_mpmc_push_n, .pop_n = raw_mpmc_pop_n,
};

static const slb_ops chan_spsc_try = {
    .name = "sl_chan SPSC try", .peer = "sluice", .kind = SLB_SPSC,
    .flags = SLB_FIFO | SLB_OURS | SLB_SINGLE, .note = EXACT,
    .create = chan_spsc_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push_n = chan_push_n, .pop_n = chan_pop_n,
};

static const slb_ops chan_mpmc_try = {
    .name = "sl_chan MPMC try", .peer = "sluice", .kind = SLB_MPMC,
    .flags = SLB_FIFO | SLB_OURS, .note = EXACT,
    .create = chan_mpmc_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push_n = chan_push_n, .pop_n = chan_pop_n,
};

static const slb_ops chan_spsc_block = {
    .name = "sl_chan SPSC send/recv", .peer = "sluice", .kind = SLB_BLOCKING,
    .flags = SLB_FIFO | SLB_OURS | SLB_SINGLE, .note = EXACT,
    .create = chan_spsc_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push = chan_push, .pop = chan_pop,
};

static const slb_ops chan_mpmc_block = {
    .name = "sl_chan MPMC send/recv", .peer = "sluice", .kind = SLB_BLOCKING,
    .flags = SLB_FIFO | SLB_OURS, .note = EXACT,
    .create = chan_mpmc_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push = chan_push, .pop = chan_pop,
};

static const slb_ops *const sluice_list[] = {
    &raw_spsc, &chan_spsc_try, &raw_mpmc, &chan_mpmc_try,
    &chan_spsc_block, &chan_mpmc_block, NULL,
};

const slb_ops *const *slb_peers_sluice(void)
{
    return sluice_list;
}
