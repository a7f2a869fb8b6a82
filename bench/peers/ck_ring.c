/*
 * ck_ring.c — Concurrency Kit's ck_ring, SPSC and MPMC.
 *
 * ck_ring's ordinary interface stores pointers, so an 8-byte message travels
 * as a pointer-sized value (no allocation). For 64-byte messages the ring is
 * instantiated over a 64-byte struct with CK_RING_PROTOTYPE, which copies the
 * struct into the ring's own buffer — the same move-by-copy the other queues
 * do. Other sizes are not offered (n/a in the table).
 *
 * Capacity: the ring has a power-of-two number of slots and keeps one free,
 * so 1024 slots hold 1023 messages; we do not round up to 2048 because that
 * would give it twice the buffering of everyone else.
 */
#include <ck_ring.h>
#include <stdlib.h>
#include <string.h>

#include "contender.h"
#include "peers/peers.h"

struct slb_m64 {
    uint64_t w[8];
};

CK_RING_PROTOTYPE(m64, slb_m64)

typedef struct ck_queue {
    ck_ring_t ring;       /* first: the allocation is cache-line aligned */
    void *buffer;         /* ck_ring_buffer_t[] or struct slb_m64[] */
    size_t elem_size;
} ck_queue;

static void *ckq_create(size_t capacity, size_t elem_size)
{
    if (elem_size != 8 && elem_size != 64)
        return NULL;
    size_t slots = slb_pow2(capacity);
    if (slots > (1u << 30))
        return NULL;
    ck_queue *q = aligned_alloc(64, (sizeof(ck_queue) + 63) / 64 * 64);
    if (!q)
        return NULL;
    size_t per = elem_size == 8 ? sizeof(ck_ring_buffer_t) : sizeof(struct slb_m64);
    q->buffer = aligned_alloc(64, (slots * per + 63) / 64 * 64);
    if (!q->buffer) {
        free(q);
        return NULL;
    }
    q->elem_size = elem_size;
    ck_ring_init(&q->ring, (unsigned)slots);
    return q;
}

static void ckq_destroy(void *p)
{
    ck_queue *q = p;
    free(q->buffer);
    free(q);
}

static bool ck_spsc_try_push(void *p, void *h, const void *m)
{
    ck_queue *q = p;
    (void)h;
    if (q->elem_size == 8) {
        uintptr_t v;
        memcpy(&v, m, sizeof(v));
        return ck_ring_enqueue_spsc(&q->ring, q->buffer, (const void *)v);
    }
    /* The prototype takes a non-const pointer but only reads it. */
    return ck_ring_enqueue_spsc_m64(&q->ring, q->buffer, (struct slb_m64 *)m);
}

static bool ck_spsc_try_pop(void *p, void *h, void *m)
{
    ck_queue *q = p;
    (void)h;
    if (q->elem_size == 8) {
        void *v;
        if (!ck_ring_dequeue_spsc(&q->ring, q->buffer, &v))
            return false;
        memcpy(m, &v, sizeof(v));
        return true;
    }
    return ck_ring_dequeue_spsc_m64(&q->ring, q->buffer, m);
}

static bool ck_mpmc_try_push(void *p, void *h, const void *m)
{
    ck_queue *q = p;
    (void)h;
    if (q->elem_size == 8) {
        uintptr_t v;
        memcpy(&v, m, sizeof(v));
        return ck_ring_enqueue_mpmc(&q->ring, q->buffer, (const void *)v);
    }
    /* The prototype takes a non-const pointer but only reads it. */
    return ck_ring_enqueue_mpmc_m64(&q->ring, q->buffer, (struct slb_m64 *)m);
}

static bool ck_mpmc_try_pop(void *p, void *h, void *m)
{
    ck_queue *q = p;
    (void)h;
    /* dequeue (not trydequeue): it retries a lost race itself and reports
     * false only when the ring is empty, like every other try_pop here. */
    if (q->elem_size == 8) {
        void *v;
        if (!ck_ring_dequeue_mpmc(&q->ring, q->buffer, &v))
            return false;
        memcpy(m, &v, sizeof(v));
        return true;
    }
    return ck_ring_dequeue_mpmc_m64(&q->ring, q->buffer, m);
}

#define CK_NOTE "power-of-two slots, one kept free (1024 hold 1023); 8 and 64 bytes"

static const slb_ops ck_spsc = {
    .name = "ck_ring spsc", .peer = "ck", .kind = SLB_SPSC,
    .flags = SLB_FIFO | SLB_SINGLE, .note = CK_NOTE,
    .create = ckq_create, .destroy = ckq_destroy,
    .try_push = ck_spsc_try_push, .try_pop = ck_spsc_try_pop,
};

static const slb_ops ck_mpmc = {
    .name = "ck_ring mpmc", .peer = "ck", .kind = SLB_MPMC,
    .flags = SLB_FIFO, .note = CK_NOTE,
    .create = ckq_create, .destroy = ckq_destroy,
    .try_push = ck_mpmc_try_push, .try_pop = ck_mpmc_try_pop,
};

static const slb_ops *const ck_list[] = { &ck_spsc, &ck_mpmc, NULL };

const slb_ops *const *slb_peers_ck(void)
{
    return ck_list;
}
