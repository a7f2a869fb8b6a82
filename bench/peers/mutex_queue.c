/*
 * mutex_queue.c — the baseline: a bounded ring under one mutex, with two
 * condition variables for the blocking forms.
 *
 * This is what most programs write first, so every table shows how far each
 * queue is from it. It is always built. It runs twice: through try_push/
 * try_pop with the driver spinning (kind MPMC) and through the blocking
 * push/pop (kind blocking).
 *
 * The same ring is also the baseline of the overwrite workload ("mutex
 * overwrite ring", kind overwrite): no installed library offers a ring that
 * displaces its oldest message when full, so sluice's SL_RING is measured
 * against the obvious locked version — take the oldest out, put the new one
 * in, under one lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "contender.h"
#include "peers/peers.h"

typedef struct mutex_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty;
    pthread_cond_t not_full;
    unsigned char *slots;
    size_t capacity, elem_size;
    size_t head, count; /* guarded by lock */
} mutex_queue;

static void *mq_create(size_t capacity, size_t elem_size)
{
    mutex_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->slots = malloc(capacity * elem_size);
    if (!q->slots) {
        free(q);
        return NULL;
    }
    q->capacity = capacity;
    q->elem_size = elem_size;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    return q;
}

static void mq_destroy(void *p)
{
    mutex_queue *q = p;
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    free(q->slots);
    free(q);
}

/* Both helpers run under the lock. */
static void mq_put(mutex_queue *q, const void *m)
{
    size_t at = (q->head + q->count) % q->capacity;
    memcpy(q->slots + at * q->elem_size, m, q->elem_size);
    q->count++;
}

static void mq_take(mutex_queue *q, void *m)
{
    memcpy(m, q->slots + q->head * q->elem_size, q->elem_size);
    q->head = (q->head + 1) % q->capacity;
    q->count--;
}

static bool mq_try_push(void *p, void *h, const void *m)
{
    mutex_queue *q = p;
    (void)h;
    pthread_mutex_lock(&q->lock);
    bool ok = q->count < q->capacity;
    if (ok)
        mq_put(q, m);
    pthread_mutex_unlock(&q->lock);
    /* glibc makes signal free while nobody waits, so the plain version
     * signals unconditionally, as a first implementation would. */
    if (ok)
        pthread_cond_signal(&q->not_empty);
    return ok;
}

static bool mq_try_pop(void *p, void *h, void *m)
{
    mutex_queue *q = p;
    (void)h;
    pthread_mutex_lock(&q->lock);
    bool ok = q->count > 0;
    if (ok)
        mq_take(q, m);
    pthread_mutex_unlock(&q->lock);
    if (ok)
        pthread_cond_signal(&q->not_full);
    return ok;
}

static bool mq_push(void *p, void *h, const void *m)
{
    mutex_queue *q = p;
    (void)h;
    pthread_mutex_lock(&q->lock);
    while (q->count == q->capacity)
        pthread_cond_wait(&q->not_full, &q->lock);
    mq_put(q, m);
    pthread_mutex_unlock(&q->lock);
    pthread_cond_signal(&q->not_empty);
    return true;
}

static bool mq_pop(void *p, void *h, void *m)
{
    mutex_queue *q = p;
    (void)h;
    pthread_mutex_lock(&q->lock);
    while (q->count == 0)
        pthread_cond_wait(&q->not_empty, &q->lock);
    mq_take(q, m);
    pthread_mutex_unlock(&q->lock);
    pthread_cond_signal(&q->not_full);
    return true;
}

/* Never refuses: when full, the oldest message goes to `evicted` first. */
static bool mq_push_evict(void *p, void *h, const void *m, void *evicted)
{
    mutex_queue *q = p;
    (void)h;
    pthread_mutex_lock(&q->lock);
    bool full = q->count == q->capacity;
    if (full)
        mq_take(q, evicted);
    mq_put(q, m);
    pthread_mutex_unlock(&q->lock);
    return full;
}

static const slb_ops mq_try = {
    .name = "mutex queue try", .peer = "mutex", .kind = SLB_MPMC,
    .flags = SLB_FIFO, .note = "exactly the capacity",
    .create = mq_create, .destroy = mq_destroy,
    .try_push = mq_try_push, .try_pop = mq_try_pop,
};

static const slb_ops mq_block = {
    .name = "mutex queue", .peer = "mutex", .kind = SLB_BLOCKING,
    .flags = SLB_FIFO, .note = "exactly the capacity",
    .create = mq_create, .destroy = mq_destroy,
    .try_push = mq_try_push, .try_pop = mq_try_pop,
    .push = mq_push, .pop = mq_pop,
};

static const slb_ops mq_overwrite = {
    .name = "mutex overwrite ring", .peer = "mutex", .kind = SLB_OVERWRITE,
    .flags = SLB_FIFO, .note = "exactly the capacity; a full ring displaces the oldest",
    .create = mq_create, .destroy = mq_destroy,
    .try_pop = mq_try_pop, .push_evict = mq_push_evict,
};

static const slb_ops *const mq_list[] = { &mq_try, &mq_block, &mq_overwrite, NULL };

const slb_ops *const *slb_peers_mutex(void)
{
    return mq_list;
}
