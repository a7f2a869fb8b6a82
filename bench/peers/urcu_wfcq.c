/*
 * urcu_wfcq.c — liburcu's wait-free concurrent queue (cds_wfcq).
 *
 * cds_wfcq is intrusive and unbounded: the user allocates a node per message.
 * The adapter does what a user would — malloc a node holding the message on
 * push, free it on pop — so the allocator's cost is part of this peer's
 * figure. Enqueue is wait-free; dequeue takes the queue's internal mutex
 * (cds_wfcq_dequeue_blocking), which is how liburcu makes it safe for many
 * consumers. It never blocks on empty, so it runs as an MPMC (try) peer.
 *
 * _LGPL_SOURCE selects the inline versions from urcu/static/, as a program
 * using it for speed would.
 */
#define _LGPL_SOURCE 1
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/wfcqueue.h>

#include "contender.h"
#include "peers/peers.h"

typedef struct wfcq_node {
    struct cds_wfcq_node link;
    uint64_t msg[]; /* elem_size bytes; uint64_t keeps it 8-aligned */
} wfcq_node;

typedef struct wfcq_queue {
    /* Producers touch the tail, consumers the head: separate lines. */
    alignas(64) struct cds_wfcq_head head;
    alignas(64) struct cds_wfcq_tail tail;
    alignas(64) size_t elem_size;
} wfcq_queue;

static void *wfcq_create(size_t capacity, size_t elem_size)
{
    (void)capacity; /* unbounded: said so in the table */
    wfcq_queue *q = aligned_alloc(64, sizeof(wfcq_queue));
    if (!q)
        return NULL;
    cds_wfcq_init(&q->head, &q->tail);
    q->elem_size = elem_size;
    return q;
}

static void wfcq_destroy(void *p)
{
    wfcq_queue *q = p;
    struct cds_wfcq_node *n;
    while ((n = cds_wfcq_dequeue_blocking(&q->head, &q->tail)) != NULL)
        free(caa_container_of(n, wfcq_node, link));
    cds_wfcq_destroy(&q->head, &q->tail);
    free(q);
}

static bool wfcq_try_push(void *p, void *h, const void *m)
{
    wfcq_queue *q = p;
    (void)h;
    wfcq_node *n = malloc(sizeof(*n) + q->elem_size);
    if (!n)
        slb_die("urcu cds_wfcq", "out of memory for a node");
    cds_wfcq_node_init(&n->link);
    memcpy(n->msg, m, q->elem_size);
    cds_wfcq_enqueue(&q->head, &q->tail, &n->link);
    return true;
}

static bool wfcq_try_pop(void *p, void *h, void *m)
{
    wfcq_queue *q = p;
    (void)h;
    struct cds_wfcq_node *link = cds_wfcq_dequeue_blocking(&q->head, &q->tail);
    if (!link)
        return false;
    wfcq_node *n = caa_container_of(link, wfcq_node, link);
    memcpy(m, n->msg, q->elem_size);
    free(n);
    return true;
}

static const slb_ops wfcq_ops = {
    .name = "urcu cds_wfcq", .peer = "urcu", .kind = SLB_MPMC,
    .flags = SLB_FIFO | SLB_UNBOUNDED,
    .note = "unbounded; one malloc'd node per message",
    .create = wfcq_create, .destroy = wfcq_destroy,
    .try_push = wfcq_try_push, .try_pop = wfcq_try_pop,
};

static const slb_ops *const wfcq_list[] = { &wfcq_ops, NULL };

const slb_ops *const *slb_peers_urcu(void)
{
    return wfcq_list;
}
