/*
 * pool/exec_task.c — task records: slabs, per-worker caches, the shared pool.
 *
 * A spawn on a worker takes a record from the worker's own cache (a plain
 * singly linked list only that worker touches) and a sync on a worker gives
 * it back there: no atomic operation, no allocation. Only when a cache runs
 * dry does its worker refill a batch from the shared pool, under the pool's
 * mutex, and only when the pool is dry is a slab of SL__SLAB_TASKS records
 * allocated. A cache that grows past SL__CACHE_HIGH (a worker that syncs more
 * tasks than it spawns) returns half of itself to the pool. Foreign threads
 * allocate and free through the pool directly.
 *
 * Records are never returned to the system while the executor lives: a future
 * is {record, generation}, and sl_sync and the queries read the record's
 * generation before anything else, so the record must stay readable for as
 * long as a stale future might exist. The generation is even while a record is
 * free or spawned-and-unclaimed, odd once claimed by a sync, and every free
 * advances it to the next even value (docs/exec.md, "Futures").
 */
#include "exec_internal.h"
#include "internal/sysops.h"

#include <stdlib.h>
#include <string.h>

/* A dry cache takes this many records from the pool at once. */
#define CACHE_REFILL 32u

/* Allocates a slab and chains its records onto the pool. Called with the pool
 * lock held. Returns false when out of memory. */
static bool slab_add_locked(sl_exec *ex)
{
    sl__slab *slab = sl__alloc(0, sizeof *slab);
    if (!slab)
        return false;
    slab->tasks = sl__alloc(SL_CACHELINE, SL__SLAB_TASKS * sizeof(sl__task));
    if (!slab->tasks) {
        free(slab);
        return false;
    }
    for (unsigned i = 0; i < SL__SLAB_TASKS; i++) {
        sl__task *t = &slab->tasks[i];
        memset(t, 0, offsetof(sl__task, payload));
        /* 2, not 0: {record, 0} is never a live future. */
        atomic_init(&t->gen, 2);
        atomic_init(&t->state, SL__TASK_PENDING);
        atomic_init(&t->sleep, NULL);
        sl_event_init(&t->done);
        t->ex = ex;
        t->link.next = ex->pool_free;
        ex->pool_free = t;
    }
    slab->next = ex->slabs;
    ex->slabs = slab;
    return true;
}

/* Takes one record from the pool (allocating a slab if it is dry). Called with
 * the pool lock held. */
static sl__task *pool_pop_locked(sl_exec *ex)
{
    if (!ex->pool_free && !slab_add_locked(ex))
        return NULL;
    sl__task *t = ex->pool_free;
    ex->pool_free = t->link.next;
    return t;
}

sl__task *sl__task_alloc_slow(sl_exec *ex, sl__worker *w)
{
    pthread_mutex_lock(&ex->pool_lock);
    sl__task *t = pool_pop_locked(ex);
    /* A worker takes a batch so that its next spawns need no lock. */
    for (unsigned i = 1; w && t && i < CACHE_REFILL; i++) {
        sl__task *more = pool_pop_locked(ex);
        if (!more)
            break;
        more->link.next = w->cache;
        w->cache = more;
        w->cache_len++;
    }
    pthread_mutex_unlock(&ex->pool_lock);
    return t;
}

/* Moves half of w's cache to the pool. */
static void cache_spill(sl_exec *ex, sl__worker *w)
{
    sl__task *first = w->cache, *last = first;
    unsigned n = w->cache_len / 2;
    for (unsigned i = 1; i < n; i++)
        last = last->link.next;
    w->cache = last->link.next;
    w->cache_len -= n;
    pthread_mutex_lock(&ex->pool_lock);
    last->link.next = ex->pool_free;
    ex->pool_free = first;
    pthread_mutex_unlock(&ex->pool_lock);
}

/* t's generation has been advanced (sl__task_free). */
void sl__task_free_slow(sl_exec *ex, sl__worker *w, sl__task *t)
{
    if (w) {
        t->link.next = w->cache;
        w->cache = t;
        w->cache_len++;
        cache_spill(ex, w);
        return;
    }
    pthread_mutex_lock(&ex->pool_lock);
    t->link.next = ex->pool_free;
    ex->pool_free = t;
    pthread_mutex_unlock(&ex->pool_lock);
}

void sl__task_free_all(sl_exec *ex)
{
    while (ex->slabs) {
        sl__slab *next = ex->slabs->next;
        free(ex->slabs->tasks);
        free(ex->slabs);
        ex->slabs = next;
    }
    ex->pool_free = NULL;
}
