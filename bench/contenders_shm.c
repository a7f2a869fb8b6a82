/*
 * contenders_shm.c — sluice's channel in shared memory behind the contender
 * table, for `sl-bench ipc` (built only when sluice/shm.h is there).
 *
 * create() makes the channel in an anonymous memfd before sl-bench forks its
 * peer. Each side then opens the channel itself from the segment's
 * descriptor (attach, in its own process after the fork), as two programs
 * would: its own mapping and its own handle, so the runs go through the
 * open path's checks and no handle crosses the fork. The creator's handle
 * only checks that the channel is empty after a run and destroys it.
 *
 * A status other than the documented one for the situation is a library
 * bug: the adapter stops the benchmark naming it.
 */
#include "bench.h"
#include "contender.h"
#include "peers/peers.h"

#include <stdlib.h>

#include "sluice/chan.h"
#include "sluice/select.h"
#include "sluice/shm.h"

#define SHM_WHO "sl_chan shm"

static void *shm_create(sl_flavor flavor, size_t capacity, size_t elem_size)
{
    sl_chan_opts o = { .flavor = flavor, .elem_size = elem_size, .capacity = capacity };
    sl_chan *ch = NULL;
    return sl_chan_shm_create(&ch, NULL, &o, 0) == SL_OK ? ch : NULL;
}

static void *shm_spsc_create(size_t capacity, size_t elem_size)
{
    return shm_create(SL_SPSC, capacity, elem_size);
}

static void *shm_mpmc_create(size_t capacity, size_t elem_size)
{
    return shm_create(SL_MPMC, capacity, elem_size);
}

static void shm_destroy(void *q)
{
    sl_chan_free(q);
}

/* This side's own handle, opened from the creator's descriptor, which the
 * peer process inherited. The expectation is the creator's geometry. */
static void *shm_attach(void *q, bool producer)
{
    (void)producer;
    sl_chan_opts expect = { .flavor = sl_chan_flavor(q), .elem_size = sl_chan_elem_size(q),
                            .capacity = sl_chan_cap(q) };
    sl_chan *h = NULL;
    sl_status s = sl_chan_shm_open_fd(&h, sl_chan_shm_fd(q), &expect);
    if (s != SL_OK)
        slb_die(SHM_WHO, "sl_chan_shm_open_fd returned %s", sl_status_str(s));
    return h;
}

static void shm_detach(void *q, void *h)
{
    (void)q;
    sl_chan_free(h);
}

/* h is NULL only for the driver's end-of-run look with the creator's handle. */
static sl_chan *handle(void *q, void *h)
{
    return h ? h : q;
}

static bool shm_try_push(void *q, void *h, const void *m)
{
    sl_status s = sl_chan_try_send(handle(q, h), m);
    if (s != SL_OK && s != SL_FULL)
        slb_die(SHM_WHO, "sl_chan_try_send returned %s", sl_status_str(s));
    return s == SL_OK;
}

static bool shm_try_pop(void *q, void *h, void *m)
{
    sl_status s = sl_chan_try_recv(handle(q, h), m);
    if (s != SL_OK && s != SL_EMPTY)
        slb_die(SHM_WHO, "sl_chan_try_recv returned %s", sl_status_str(s));
    return s == SL_OK;
}

static bool shm_push(void *q, void *h, const void *m)
{
    sl_status s = sl_chan_send(handle(q, h), m);
    if (s != SL_OK)
        slb_die(SHM_WHO, "sl_chan_send returned %s", sl_status_str(s));
    return true;
}

static bool shm_pop(void *q, void *h, void *m)
{
    sl_status s = sl_chan_recv(handle(q, h), m);
    if (s != SL_OK)
        slb_die(SHM_WHO, "sl_chan_recv returned %s", sl_status_str(s));
    return true;
}

/* ---- the same channel through sl_select --------------------------------------
 * Each side's blocking send and receive is a select over the shared channel
 * and an in-process channel of its own that is never ready (full for a send
 * case, empty for a receive case): the select round trip across processes,
 * woken through the segment's bell. Its yardstick is the same select between
 * two threads over an in-process SL_MPMC channel (`local`), so that the
 * ratio is what the segment and the process boundary cost a select, not
 * what a select costs over a plain call. */
typedef struct sel_side {
    sl_chan *ch;            /* this side's handle on the segment, or the local channel */
    sl_chan *full, *empty;  /* the never-ready in-process cases */
    bool own;               /* ch is this side's own handle, freed at detach */
} sel_side;

static sel_side *sel_side_new(void *q)
{
    sel_side *s = calloc(1, sizeof *s);
    sl_chan_opts o = { .flavor = SL_MPMC, .elem_size = sl_chan_elem_size(q), .capacity = 1 };
    unsigned char zero[SLB_MAX_ELEM] = { 0 };
    if (!s || sl_chan_new(&s->full, &o) != SL_OK || sl_chan_new(&s->empty, &o) != SL_OK ||
        sl_chan_try_send(s->full, zero) != SL_OK)
        slb_die(SHM_WHO, "out of memory for the select's in-process cases");
    return s;
}

static void *sel_attach(void *q, bool producer)
{
    sel_side *s = sel_side_new(q);
    s->ch = shm_attach(q, producer);
    s->own = true;
    return s;
}

/* Both threads select on the one in-process channel q itself. */
static void *sel_attach_local(void *q, bool producer)
{
    (void)producer;
    sel_side *s = sel_side_new(q);
    s->ch = q;
    return s;
}

static void *local_mpmc_create(size_t capacity, size_t elem_size)
{
    sl_chan_opts o = { .flavor = SL_MPMC, .elem_size = elem_size, .capacity = capacity };
    sl_chan *ch = NULL;
    return sl_chan_new(&ch, &o) == SL_OK ? ch : NULL;
}

static void sel_detach(void *q, void *h)
{
    sel_side *s = h;
    if (s->own)
        shm_detach(q, s->ch);
    sl_chan_free(s->full);
    sl_chan_free(s->empty);
    free(s);
}

static bool sel_try_push(void *q, void *h, const void *m)
{
    return shm_try_push(q, h ? ((sel_side *)h)->ch : NULL, m);
}

static bool sel_try_pop(void *q, void *h, void *m)
{
    return shm_try_pop(q, h ? ((sel_side *)h)->ch : NULL, m);
}

static void sel_one(sel_side *s, sl_select_op op, void *m)
{
    unsigned char other[SLB_MAX_ELEM];
    sl_select_case c[] = { { op == SL_SEL_SEND ? s->full : s->empty, op, other },
                           { s->ch, op, m } };
    size_t i = 2;
    sl_status st = sl_select(c, 2, SL_FOREVER, &i);
    if (st != SL_OK || i != 1)
        slb_die(SHM_WHO, "sl_select returned %s on case %zu", sl_status_str(st), i);
}

static bool sel_push(void *q, void *h, const void *m)
{
    (void)q;
    sel_one(h, SL_SEL_SEND, (void *)m);
    return true;
}

static bool sel_pop(void *q, void *h, void *m)
{
    (void)q;
    sel_one(h, SL_SEL_RECV, m);
    return true;
}

#define SEL_OPS(id, nm, nt, create_, attach_) \
    static const slb_ops id = { \
        .name = nm, .peer = "sluice", .kind = SLB_BLOCKING, \
        .flags = SLB_FIFO | SLB_OURS | SLB_VIA_SELECT, .flavor = 2, .note = nt, \
        .create = create_, .destroy = shm_destroy, .attach = attach_, .detach = sel_detach, \
        .try_push = sel_try_push, .try_pop = sel_try_pop, .push = sel_push, .pop = sel_pop }

SEL_OPS(shm_mpmc_select, "sl_chan MPMC shm select",
        "the MPMC shm channel, every blocking call a select beside an in-process channel",
        shm_mpmc_create, sel_attach);
SEL_OPS(local_mpmc_select, "sl_chan MPMC select", "an in-process MPMC channel, the same selects",
        local_mpmc_create, sel_attach_local);

#define SHM_NOTE "exactly the capacity; a memfd, opened by each side after fork"
#define SHM_THREADS_NOTE "the same, both sides threads of one process (own handles)"

#define SHM_OPS(id, nm, fl, nt, flags_) \
    static const slb_ops id = { \
        .name = nm, .peer = "sluice", .kind = SLB_BLOCKING, .flags = SLB_FIFO | SLB_OURS | (flags_), \
        .note = nt, .flavor = fl, .create = fl == 1 ? shm_spsc_create : shm_mpmc_create, \
        .destroy = shm_destroy, .attach = shm_attach, .detach = shm_detach, \
        .try_push = shm_try_push, .try_pop = shm_try_pop, .push = shm_push, .pop = shm_pop }

SHM_OPS(shm_spsc, "sl_chan SPSC shm", 1, SHM_NOTE, SLB_SINGLE);
SHM_OPS(shm_mpmc, "sl_chan MPMC shm", 2, SHM_NOTE, 0);
SHM_OPS(shm_spsc_threads, "sl_chan SPSC shm threads", 1, SHM_THREADS_NOTE, SLB_SINGLE);
SHM_OPS(shm_mpmc_threads, "sl_chan MPMC shm threads", 2, SHM_THREADS_NOTE, 0);

/* Between processes: what sl-bench ipc measures. */
const slb_ops *const *slb_peers_sluice_shm(void)
{
    static const slb_ops *const list[] = { &shm_spsc, &shm_mpmc, &shm_mpmc_select, NULL };
    return list;
}

/* The same segments between two threads: set beside the in-process channel,
 * they separate what the segment costs from what the process boundary does. */
const slb_ops *const *slb_peers_sluice_shm_threads(void)
{
    static const slb_ops *const list[] = { &shm_spsc_threads, &shm_mpmc_threads, NULL };
    return list;
}

/* The select row's yardstick between two threads: an in-process channel. */
const slb_ops *const *slb_peers_sluice_select_threads(void)
{
    static const slb_ops *const list[] = { &local_mpmc_select, NULL };
    return list;
}
