/*
 * pool/pool_queue.c — where accepted jobs wait for a worker: one unbounded
 * lock-free list (SL_LIST) per priority level and inbox.
 *
 * The shared-queue pool has one inbox; the inbox dispatch modes have one per
 * worker slot. Unbounded lists, because the pool's bound (queue_capacity)
 * counts more than these lists hold — jobs waiting for their key, and
 * reservations not yet pushed — and is enforced on the `pending` count
 * instead (pool_submit.c). An empty list's pop only reads (it compares the
 * segment's dequeue and enqueue indices), so workers searching several
 * empty lists do not write shared lines.
 */
#include <stdlib.h>

#include "pool_impl.h"
#include "internal/sysops.h"

static sl_list *list_at(const sl__pool_queue *q, unsigned inbox, unsigned level)
{
    return &q->lists[(size_t)inbox * q->levels + level];
}

sl_status sl__pool_queue_init(sl__pool_queue *q, unsigned levels, unsigned inboxes)
{
    size_t n = (size_t)levels * inboxes;
    q->levels = levels;
    q->inboxes = inboxes;
    /* sl_list holds cache-line aligned members: allocate it aligned. */
    q->lists = sl__alloc(SL_CACHELINE, n * sizeof(sl_list));
    if (!q->lists)
        return SL_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (sl_list_init(&q->lists[i], sizeof(sl_job)) != SL_OK) {
            while (i--)
                sl_list_destroy(&q->lists[i]);
            free(q->lists);
            q->lists = NULL;
            return SL_ENOMEM;
        }
    }
    return SL_OK;
}

void sl__pool_queue_destroy(sl__pool_queue *q)
{
    if (!q->lists)
        return;
    for (size_t i = 0; i < (size_t)q->levels * q->inboxes; i++)
        sl_list_destroy(&q->lists[i]);
    free(q->lists);
    q->lists = NULL;
}

sl_status sl__pool_queue_push(sl__pool_queue *q, unsigned inbox, const sl_job *job)
{
    return sl_list_try_push(list_at(q, inbox, job->priority), job);
}

/* One level: the own inbox, then the others from the next one on, so that
 * thieves spread over the inboxes instead of all raiding inbox 0. Up to max
 * jobs, all from the first list that has any. */
static unsigned pop_level(sl__pool_queue *q, unsigned own, unsigned level, sl_job *out,
                          unsigned max, unsigned *from)
{
    for (unsigned k = 0; k < q->inboxes; k++) {
        unsigned inbox = own + k < q->inboxes ? own + k : own + k - q->inboxes;
        size_t n = sl_list_pop_n(list_at(q, inbox, level), out, max);
        if (n) {
            *from = inbox;
            return (unsigned)n;
        }
    }
    return 0;
}

unsigned sl__pool_queue_pop(sl__pool_queue *q, unsigned own, sl_job *out, unsigned max,
                            unsigned *from)
{
    own = q->inboxes == 1 ? 0 : own; /* the shared queue: every worker's own */
    if (max > 1)
        return pop_level(q, own, q->levels - 1, out, max, from);
    for (unsigned level = q->levels; level-- > 0;) {
        if (pop_level(q, own, level, out, 1, from))
            return 1;
    }
    return 0;
}

bool sl__pool_queue_any(const sl__pool_queue *q)
{
    for (size_t i = 0; i < sl__pool_queue_lists(q); i++) {
        if (sl__pool_queue_len_at(q, i) != 0)
            return true;
    }
    return false;
}

size_t sl__pool_queue_len_at(const sl__pool_queue *q, size_t i)
{
    return sl_list_len(&q->lists[i]);
}

bool sl__pool_queue_pop_at(sl__pool_queue *q, size_t i, sl_job *out, unsigned *from)
{
    *from = (unsigned)(i / q->levels);
    return sl_list_try_pop(&q->lists[i], out) == SL_OK;
}

bool sl__pool_queue_any_above(const sl__pool_queue *q, unsigned level)
{
    for (unsigned inbox = 0; inbox < q->inboxes; inbox++) {
        for (unsigned l = level + 1; l < q->levels; l++) {
            if (sl_list_len(list_at(q, inbox, l)) != 0)
                return true;
        }
    }
    return false;
}
