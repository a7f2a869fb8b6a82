/*
 * line_ceiling.c — `sl-bench ipc`'s yardstick: not a queue anyone should
 * use, but a measurement of the machine, run in the same shuffled rounds as
 * the contenders.
 *
 * A bare single-producer ring in memory shared across fork(): each message
 * is copied into its slot and published by a release store of the tail, as
 * in every ring, but its consumer, on an empty look, waits 64 pauses before
 * it looks again. A consumer that keeps up with its producer reads the
 * line the producer writes next, and each such look costs the producer's
 * next store a cache-line round trip: every ring (sluice's, crossbeam's,
 * moodycamel's) then moves one message per round trip. This one's consumer
 * stays off the producer's lines, so at 64 bytes and more its throughput
 * is what the two cores allow for one line a message, now, measured in
 * the same rounds as the kernel peers (ipc.c prints its ratio to them
 * beside the x10 target). The long wait makes its round trip meaningless,
 * and below a line a message it costs more than the looks it saves (at 8
 * bytes it moved less than sluice's channel), so it runs the throughput
 * workload at 64 bytes or more only.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "msg.h"
#include "peers/peers.h"

#define CEILING_WAIT_PAUSES 64u  /* pauses between a consumer's empty looks */
#define CEILING_YIELD_AFTER 4096u /* looks before it gives up its CPU instead */

typedef struct ceiling_side {
    _Alignas(64) _Atomic size_t index; /* this side's position */
    size_t peer_cache;                /* the other side's, as last read */
} ceiling_side;

typedef struct ceiling_ring {
    size_t capacity, mask, elem, map_len; /* read-only: a line of their own */
    ceiling_side prod, cons; /* a line each: only the full or empty look crosses */
    _Alignas(64) unsigned char slots[];
} ceiling_ring;

static void *ceiling_create(size_t capacity, size_t elem)
{
    size_t storage = 1;
    while (storage < capacity)
        storage <<= 1;
    size_t len = sizeof(ceiling_ring) + storage * elem;
    /* Shared, so that a forked peer uses the same ring. */
    ceiling_ring *q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED)
        return NULL;
    q->capacity = capacity;
    q->mask = storage - 1;
    q->elem = elem;
    q->map_len = len;
    return q;
}

static void ceiling_destroy(void *arg)
{
    ceiling_ring *q = arg;
    munmap(q, q->map_len);
}

static bool ceiling_try_push(void *arg, void *h, const void *m)
{
    (void)h;
    ceiling_ring *q = arg;
    size_t tail = atomic_load_explicit(&q->prod.index, memory_order_relaxed);
    if (tail - q->prod.peer_cache >= q->capacity) {
        /* Acquire: the consumer's copy out before our overwrite. */
        q->prod.peer_cache = atomic_load_explicit(&q->cons.index, memory_order_acquire);
        if (tail - q->prod.peer_cache >= q->capacity)
            return false;
    }
    memcpy(q->slots + (tail & q->mask) * q->elem, m, q->elem);
    /* Release: the bytes before the tail that publishes them. */
    atomic_store_explicit(&q->prod.index, tail + 1, memory_order_release);
    return true;
}

static bool ceiling_try_pop(void *arg, void *h, void *out)
{
    (void)h;
    ceiling_ring *q = arg;
    size_t head = atomic_load_explicit(&q->cons.index, memory_order_relaxed);
    if (head == q->cons.peer_cache) {
        /* Acquire: pairs with the tail's release. */
        q->cons.peer_cache = atomic_load_explicit(&q->prod.index, memory_order_acquire);
        if (head == q->cons.peer_cache)
            return false;
    }
    memcpy(out, q->slots + (head & q->mask) * q->elem, q->elem);
    /* Release: our copy out before the producer may reuse the slot. */
    atomic_store_explicit(&q->cons.index, head + 1, memory_order_release);
    return true;
}

/* The producer waits as every spinning contender does. */
static bool ceiling_push(void *q, void *h, const void *m)
{
    unsigned spins = 0;
    while (!ceiling_try_push(q, h, m))
        slb_backoff(&spins);
    return true;
}

/* The consumer stays off the producer's lines between looks. */
static bool ceiling_pop(void *q, void *h, void *out)
{
    for (unsigned looks = 0; !ceiling_try_pop(q, h, out); looks++) {
        if (looks < CEILING_YIELD_AFTER)
            for (unsigned i = 0; i < CEILING_WAIT_PAUSES; i++)
                slb_cpu_relax();
        else
            sched_yield();
    }
    return true;
}

static const slb_ops ceiling_ops = {
    .name = "line ceiling (bare ring)", .peer = "machine", .kind = SLB_BLOCKING,
    .flags = SLB_FIFO | SLB_SINGLE | SLB_YARDSTICK,
    .note = "a measurement, not a queue: its consumer waits 64 pauses on an empty look",
    .create = ceiling_create, .destroy = ceiling_destroy,
    .try_push = ceiling_try_push, .try_pop = ceiling_try_pop,
    .push = ceiling_push, .pop = ceiling_pop,
};

const slb_ops *const *slb_peers_line_ceiling(void)
{
    static const slb_ops *const list[] = { &ceiling_ops, NULL };
    return list;
}
