/*
 * contenders.c — sluice's own contenders behind the common interface.
 *
 * The raw structures (sl_spsc, sl_mpmc, sl_list, sl_ring) are what someone
 * embedding sluice in an executor would use; the channel is what applications
 * use. The queue flavours' channel runs twice: through try_send/try_recv with
 * the driver spinning (to compare with the lock-free peers) and through
 * blocking send/recv (to compare with the blocking peers), because those are
 * different promises. SL_LIST is unbounded, so it is compared with the
 * unbounded peers of the same kinds (its producers never wait either).
 *
 * SL_RING is no queue: a send into a full ring displaces the oldest message.
 * Its contenders are of kind overwrite and run only the overwrite workload,
 * where every displaced message comes back to the driver (push_evict) to be
 * verified like a received one.
 *
 * A status other than the ones the headers document for the situation is a
 * library bug, never a benchmark condition: the adapter aborts naming it.
 */
#include <stdlib.h>

#include "contender.h"
#include "peers/peers.h"
#include <string.h>

#include "sluice/chan.h"
#include "sluice/list.h"
#include "sluice/mpmc.h"
#include "sluice/ring.h"
#include "sluice/spsc.h"

/* The raw structures are cache-line aligned; malloc does not promise 64
 * bytes, and aligned_alloc wants a multiple of the alignment. */
static void *line_alloc(size_t size)
{
    return aligned_alloc(SL_CACHELINE, (size + SL_CACHELINE - 1) / SL_CACHELINE * SL_CACHELINE);
}

/* ---- raw sl_spsc ------------------------------------------------------- */

static void *raw_spsc_create(size_t capacity, size_t elem_size)
{
    sl_spsc *q = line_alloc(sizeof(sl_spsc));
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
    sl_mpmc *q = line_alloc(sizeof(sl_mpmc));
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

/* ---- raw sl_list -------------------------------------------------------- */

static void *raw_list_create(size_t capacity, size_t elem_size)
{
    (void)capacity; /* unbounded: segments are allocated as the backlog grows */
    sl_list *q = line_alloc(sizeof(sl_list));
    if (!q)
        return NULL;
    if (sl_list_init(q, elem_size) != SL_OK) {
        free(q);
        return NULL;
    }
    return q;
}

static void raw_list_destroy(void *q)
{
    sl_list_destroy(q);
    free(q);
}

/* Never full: SL_ENOMEM is the only refusal, and a benchmark that runs the
 * machine out of memory has no figure to give. */
static bool raw_list_try_push(void *q, void *h, const void *m)
{
    (void)h;
    sl_status s = sl_list_try_push(q, m);
    if (s != SL_OK)
        slb_die("sl_list", "sl_list_try_push returned %s", sl_status_str(s));
    return true;
}

static bool raw_list_try_pop(void *q, void *h, void *m)
{
    (void)h;
    sl_status s = sl_list_try_pop(q, m);
    if (s != SL_OK && s != SL_EMPTY)
        slb_die("sl_list", "sl_list_try_pop returned %s", sl_status_str(s));
    return s == SL_OK;
}

static size_t raw_list_push_n(void *q, void *h, const void *m, size_t n)
{
    (void)h;
    size_t k = sl_list_push_n(q, m, n);
    if (k != n)
        slb_die("sl_list", "sl_list_push_n pushed %zu of %zu (out of memory)", k, n);
    return k;
}

static size_t raw_list_pop_n(void *q, void *h, void *m, size_t n)
{
    (void)h;
    return sl_list_pop_n(q, m, n);
}

/* ---- raw sl_ring -------------------------------------------------------- */

static void *raw_ring_create(size_t capacity, size_t elem_size)
{
    sl_ring *r = line_alloc(sizeof(sl_ring));
    if (!r)
        return NULL;
    if (sl_ring_init(r, elem_size, capacity) != SL_OK) {
        free(r);
        return NULL;
    }
    return r;
}

static void raw_ring_destroy(void *r)
{
    sl_ring_destroy(r);
    free(r);
}

static bool raw_ring_push_evict(void *r, void *h, const void *m, void *evicted)
{
    (void)h;
    sl_status s = sl_ring_try_push(r, m, evicted);
    if (s != SL_OK && s != SL_EVICTED)
        slb_die("sl_ring", "sl_ring_try_push returned %s", sl_status_str(s));
    return s == SL_EVICTED;
}

static bool raw_ring_try_pop(void *r, void *h, void *m)
{
    (void)h;
    sl_status s = sl_ring_try_pop(r, m);
    if (s != SL_OK && s != SL_EMPTY)
        slb_die("sl_ring", "sl_ring_try_pop returned %s", sl_status_str(s));
    return s == SL_OK;
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

static void *chan_list_create(size_t capacity, size_t elem_size)
{
    return chan_create(SL_LIST, capacity, elem_size);
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

/* ---- the overwrite channel ---------------------------------------------- */

#define CHAN_RING "sl_chan RING send"

/*
 * sl_chan_send hands a displaced message to the channel's drop function,
 * which runs inside that send on the sending thread. The adapter points a
 * thread-local target at the driver's buffer for the duration of the send,
 * so the displaced message reaches the driver and is verified like a
 * received one — and the adapter checks the contract on the way: the drop
 * function runs exactly once for SL_EVICTED and never for SL_OK.
 */
static _Thread_local void *evict_to;
static _Thread_local unsigned evict_calls;

static void chan_ring_drop(void *elem, void *ctx)
{
    /* The message size rides in the context pointer: the only per-channel
     * value the drop function needs, with nothing to allocate or free. */
    size_t elem_size = (size_t)(uintptr_t)ctx;
    if (!evict_to)
        slb_die(CHAN_RING, "the drop function ran outside sl_chan_send (from "
                "sl_chan_free: a message that try_recv never returned)");
    if (evict_calls++ == 0)
        memcpy(evict_to, elem, elem_size); /* elem may be unaligned: bytes only */
}

static void *chan_ring_create(size_t capacity, size_t elem_size)
{
    sl_chan_opts o = { .flavor = SL_RING, .elem_size = elem_size, .capacity = capacity,
                       .drop = chan_ring_drop, .drop_ctx = (void *)(uintptr_t)elem_size };
    sl_chan *ch = NULL;
    return sl_chan_new(&ch, &o) == SL_OK ? ch : NULL;
}

static bool chan_ring_push_evict(void *q, void *h, const void *m, void *evicted)
{
    (void)h;
    evict_to = evicted;
    evict_calls = 0;
    sl_status s = sl_chan_send(q, m);
    evict_to = NULL;
    if (s != SL_OK && s != SL_EVICTED)
        slb_die(CHAN_RING, "sl_chan_send returned %s", sl_status_str(s));
    if (evict_calls != (s == SL_EVICTED))
        slb_die(CHAN_RING, "sl_chan_send returned %s after %u calls of the drop function",
                sl_status_str(s), evict_calls);
    return s == SL_EVICTED;
}

/* ---- the tables -------------------------------------------------------- */

#define EXACT "exactly the capacity"
#define GROWS "unbounded; one allocation per segment of min(1024 slots, 32 KiB)"
#define DISPLACES "exactly the capacity; a push into a full ring displaces the oldest"

static const slb_ops raw_spsc = {
    .name = "sl_spsc", .peer = "sluice", .kind = SLB_SPSC,
    .flags = SLB_FIFO | SLB_OURS | SLB_SINGLE, .note = EXACT, .flavor = 1,
    .create = raw_spsc_create, .destroy = raw_spsc_destroy,
    .try_push = raw_spsc_try_push, .try_pop = raw_spsc_try_pop,
    .push_n = raw_spsc_push_n, .pop_n = raw_spsc_pop_n,
};

static const slb_ops raw_mpmc = {
    .name = "sl_mpmc", .peer = "sluice", .kind = SLB_MPMC,
    .flags = SLB_FIFO | SLB_OURS, .note = EXACT, .flavor = 2,
    .create = raw_mpmc_create, .destroy = raw_mpmc_destroy,
    .try_push = raw_mpmc_try_push, .try_pop = raw_mpmc_try_pop,
    .push_n = raw_mpmc_push_n, .pop_n = raw_mpmc_pop_n,
};

static const slb_ops chan_spsc_try = {
    .name = "sl_chan SPSC try", .peer = "sluice", .kind = SLB_SPSC,
    .flags = SLB_FIFO | SLB_OURS | SLB_SINGLE, .note = EXACT, .flavor = 1,
    .create = chan_spsc_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push_n = chan_push_n, .pop_n = chan_pop_n,
};

static const slb_ops chan_mpmc_try = {
    .name = "sl_chan MPMC try", .peer = "sluice", .kind = SLB_MPMC,
    .flags = SLB_FIFO | SLB_OURS, .note = EXACT, .flavor = 2,
    .create = chan_mpmc_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push_n = chan_push_n, .pop_n = chan_pop_n,
};

static const slb_ops chan_spsc_block = {
    .name = "sl_chan SPSC send/recv", .peer = "sluice", .kind = SLB_BLOCKING,
    .flags = SLB_FIFO | SLB_OURS | SLB_SINGLE, .note = EXACT, .flavor = 1,
    .create = chan_spsc_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push = chan_push, .pop = chan_pop,
};

static const slb_ops chan_mpmc_block = {
    .name = "sl_chan MPMC send/recv", .peer = "sluice", .kind = SLB_BLOCKING,
    .flags = SLB_FIFO | SLB_OURS | SLB_RENDEZVOUS_OK, .note = EXACT, .flavor = 2,
    .create = chan_mpmc_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push = chan_push, .pop = chan_pop,
};

static const slb_ops raw_list = {
    .name = "sl_list", .peer = "sluice", .kind = SLB_MPMC,
    .flags = SLB_FIFO | SLB_OURS | SLB_UNBOUNDED, .note = GROWS, .flavor = 3,
    .create = raw_list_create, .destroy = raw_list_destroy,
    .try_push = raw_list_try_push, .try_pop = raw_list_try_pop,
    .push_n = raw_list_push_n, .pop_n = raw_list_pop_n,
};

static const slb_ops chan_list_try = {
    .name = "sl_chan LIST try", .peer = "sluice", .kind = SLB_MPMC,
    .flags = SLB_FIFO | SLB_OURS | SLB_UNBOUNDED, .note = GROWS, .flavor = 3,
    .create = chan_list_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push_n = chan_push_n, .pop_n = chan_pop_n,
};

static const slb_ops chan_list_block = {
    .name = "sl_chan LIST send/recv", .peer = "sluice", .kind = SLB_BLOCKING,
    .flags = SLB_FIFO | SLB_OURS | SLB_UNBOUNDED, .note = GROWS, .flavor = 3,
    .create = chan_list_create, .destroy = chan_destroy,
    .try_push = chan_try_push, .try_pop = chan_try_pop,
    .push = chan_push, .pop = chan_pop,
};

/* FIFO per producer holds for displaced messages too: one thread's takes
 * (receives or displacements) come out of the ring oldest first. */
static const slb_ops raw_ring = {
    .name = "sl_ring", .peer = "sluice", .kind = SLB_OVERWRITE,
    .flags = SLB_FIFO | SLB_OURS, .note = DISPLACES " (to the caller)", .flavor = 4,
    .create = raw_ring_create, .destroy = raw_ring_destroy,
    .try_pop = raw_ring_try_pop, .push_evict = raw_ring_push_evict,
};

static const slb_ops chan_ring = {
    .name = CHAN_RING, .peer = "sluice", .kind = SLB_OVERWRITE,
    .flags = SLB_FIFO | SLB_OURS, .note = DISPLACES " (to the drop function)",
    .flavor = 4,
    .create = chan_ring_create, .destroy = chan_destroy,
    .try_pop = chan_try_pop, .push_evict = chan_ring_push_evict,
};

static const slb_ops *const sluice_list[] = {
    &raw_spsc, &chan_spsc_try, &raw_mpmc, &chan_mpmc_try, &raw_list, &chan_list_try,
    &chan_spsc_block, &chan_mpmc_block, &chan_list_block, &raw_ring, &chan_ring, NULL,
};

const slb_ops *const *slb_peers_sluice(void)
{
    return sluice_list;
}
