/*
 * pool/pool_keys.c — the key table: at most one job per key is queued or
 * running; the key's later jobs wait here, in submission order.
 *
 * A key is busy from the moment its first job is queued until its last job
 * is over. While busy, further jobs of the key wait in the key's list and
 * are not in the queues at all — so a busy key never holds back the jobs of
 * other keys, and each key's jobs reach the queues (and run) one after the
 * other in submission order, whatever their priorities.
 *
 * A holder that will not run (discarded, or its worker died in it) keeps
 * the key through its on_discard report, so the key's next job starts after
 * the report; it is marked `reporting` from the moment it will not run,
 * being neither queued nor running, so that SL_JOB_UNIQUE does not refuse
 * the job's own retry.
 *
 * Keyed jobs are the rare, heavier case: one mutex guards the table. The
 * table is open addressing with linear probing and backward-shift deletion
 * (no tombstones), grown at half full and halved at an eighth full (down
 * to its first size); key 0 marks a free slot, which is why 0 means "no
 * key" in the API.
 */
#include <sched.h>
#include <stdlib.h>

#include "pool_impl.h"
#include "internal/sysops.h"

struct sl__pool_key_job {
    sl_job job;
    sl__pool_key_job *next;
};

#define KEYS_MIN_SLOTS 64u

static size_t hash_key(uint64_t key)
{
    key ^= key >> 33; /* murmur3's finaliser: keys are often small and dense */
    key *= UINT64_C(0xff51afd7ed558ccd);
    key ^= key >> 33;
    return (size_t)key;
}

sl_status sl__pool_keys_init(sl__pool_keys *k)
{
    k->slots = sl__calloc(KEYS_MIN_SLOTS, sizeof(sl__pool_key_entry));
    if (!k->slots)
        return SL_ENOMEM;
    k->mask = KEYS_MIN_SLOTS - 1;
    k->used = 0;
    atomic_init(&k->waiting, 0);
    atomic_init(&k->handing, 0);
    pthread_mutex_init(&k->lock, NULL);
    return SL_OK;
}

void sl__pool_keys_destroy(sl__pool_keys *k)
{
    if (!k->slots)
        return;
    for (size_t i = 0; i <= k->mask; i++) {
        for (sl__pool_key_job *j = k->slots[i].head, *next; j; j = next) {
            next = j->next;
            free(j);
        }
    }
    free(k->slots);
    k->slots = NULL;
    pthread_mutex_destroy(&k->lock);
}

static sl__pool_key_entry *find(sl__pool_keys *k, uint64_t key)
{
    for (size_t i = hash_key(key) & k->mask;; i = (i + 1) & k->mask) {
        if (k->slots[i].key == key)
            return &k->slots[i];
        if (k->slots[i].key == 0)
            return NULL;
    }
}

static sl__pool_key_entry *free_slot_for(sl__pool_key_entry *slots, size_t mask, uint64_t key)
{
    size_t i = hash_key(key) & mask;
    while (slots[i].key != 0)
        i = (i + 1) & mask;
    return &slots[i];
}

/* Rehashes the table into n slots (a power of two above twice the keys):
 * false, the table as it was, when no memory can be had. */
static bool resize(sl__pool_keys *k, size_t n)
{
    sl__pool_key_entry *slots = sl__calloc(n, sizeof(sl__pool_key_entry));
    if (!slots)
        return false;
    for (size_t i = 0; i <= k->mask; i++) {
        if (k->slots[i].key != 0)
            *free_slot_for(slots, n - 1, k->slots[i].key) = k->slots[i];
    }
    free(k->slots);
    k->slots = slots;
    k->mask = n - 1;
    return true;
}

/* After a burst of keys is over, the table goes back down, halving at an
 * eighth full (a quarter full after it, so that the grow at half full is
 * not the next insert's, and each halving's rehash is paid for by the
 * erases since the last). A failed allocation keeps the larger table. */
static void shrink_if_sparse(sl__pool_keys *k)
{
    size_t n = k->mask + 1;
#ifdef SL_MUTANT_POOL_KEYS_NEVER_SHRINK
    n = KEYS_MIN_SLOTS; /* planted bug: the table never shrinks */
#endif
    if (n > KEYS_MIN_SLOTS && k->used * 8 <= n)
        (void)resize(k, n / 2);
}

/* Backward-shift deletion: later members of the probe run move into the
 * hole when their home slot is at or before it (cyclically). */
static void erase(sl__pool_keys *k, sl__pool_key_entry *e)
{
    size_t hole = (size_t)(e - k->slots);
    for (size_t i = (hole + 1) & k->mask; k->slots[i].key != 0; i = (i + 1) & k->mask) {
        size_t home = hash_key(k->slots[i].key) & k->mask;
        if (((i - home) & k->mask) >= ((i - hole) & k->mask)) {
            k->slots[hole] = k->slots[i];
            hole = i;
        }
    }
    k->slots[hole] = (sl__pool_key_entry){0};
    k->used--;
}

/* Whether job is refused with SL_EXISTS, e its key's entry (NULL: the key
 * is free): a unique job, while a job of the key is queued or running — the
 * holder, unless it is in its on_discard report (then it is neither, and
 * the job waits for the report like any later job of the key), or a job
 * that waits already. */
static bool refused(const sl_job *job, const sl__pool_key_entry *e)
{
    if (!e || !(job->flags & SL_JOB_UNIQUE))
        return false;
#ifdef SL_MUTANT_POOL_UNIQUE_REFUSED_IN_REPORT
    return true; /* planted bug: a reported holder counts as queued */
#else
    return e->head || !e->reporting;
#endif
}

static sl_status admit_locked(sl__pool_keys *k, const sl_job *job)
{
    sl__pool_key_entry *e = find(k, job->key);
    if (!e) {
        if ((k->used + 1) * 2 > k->mask + 1 && !resize(k, (k->mask + 1) * 2))
            return SL_ENOMEM;
        e = free_slot_for(k->slots, k->mask, job->key);
        *e = (sl__pool_key_entry){.key = job->key};
        k->used++;
        return SL_OK;
    }
    if (refused(job, e))
        return SL_EXISTS;
    sl__pool_key_job *w = sl__alloc(0, sizeof(*w));
    if (!w)
        return SL_ENOMEM;
    *w = (sl__pool_key_job){.job = *job};
    if (e->tail)
        e->tail->next = w;
    else
        e->head = w;
    e->tail = w;
    /* seq_cst, after the submit's reservation: see sl__pool_has_work (pool_impl.h). */
    atomic_fetch_add_explicit(&k->waiting, 1, memory_order_seq_cst);
    return SL_FULL;
}

sl_status sl__pool_keys_admit(sl__pool_keys *k, const sl_job *job)
{
    pthread_mutex_lock(&k->lock);
    sl_status st = admit_locked(k, job);
    pthread_mutex_unlock(&k->lock);
    return st;
}

bool sl__pool_keys_refuse(sl__pool_keys *k, const sl_job *job)
{
    if (!(job->flags & SL_JOB_UNIQUE))
        return false; /* without taking the lock */
    pthread_mutex_lock(&k->lock);
    bool r = refused(job, find(k, job->key));
    pthread_mutex_unlock(&k->lock);
    return r;
}

bool sl__pool_keys_release(sl__pool_keys *k, uint64_t key, sl_job *next)
{
    sl__pool_key_job *w = NULL;
    pthread_mutex_lock(&k->lock);
    sl__pool_key_entry *e = find(k, key);
    if (e && e->head) {
        w = e->head;
        /* seq_cst, before the job is pushed: see sl__pool_has_work (pool_impl.h). */
        atomic_fetch_sub_explicit(&k->waiting, 1, memory_order_seq_cst);
        e->head = w->next;
        if (!e->head)
            e->tail = NULL;
        e->reporting = false; /* the key's new holder is queued */
        /* Relaxed: the lock orders it before a later take_waiting's look. */
        atomic_fetch_add_explicit(&k->handing, 1, memory_order_relaxed);
    } else if (e) {
        erase(k, e);
        shrink_if_sparse(k);
    }
    pthread_mutex_unlock(&k->lock);
    if (!w)
        return false;
    *next = w->job;
    free(w);
    return true;
}

void sl__pool_keys_reporting(sl__pool_keys *k, uint64_t key)
{
    pthread_mutex_lock(&k->lock);
    sl__pool_key_entry *e = find(k, key);
    if (e)
        e->reporting = true;
    pthread_mutex_unlock(&k->lock);
}

void sl__pool_keys_handed(sl__pool_keys *k)
{
    /* Release: the push precedes the decrement (take_waiting acquires it). */
    atomic_fetch_sub_explicit(&k->handing, 1, memory_order_release);
}

sl__pool_key_job *sl__pool_keys_take_waiting(sl__pool_keys *k)
{
    sl__pool_key_job *all = NULL;
    pthread_mutex_lock(&k->lock);
    for (size_t i = 0; i <= k->mask; i++) {
        sl__pool_key_entry *e = &k->slots[i];
        if (e->head) {
            for (sl__pool_key_job *j = e->head; j; j = j->next)
                atomic_fetch_sub_explicit(&k->waiting, 1, memory_order_seq_cst);
            e->tail->next = all;
            all = e->head;
            e->head = e->tail = NULL;
        }
    }
    pthread_mutex_unlock(&k->lock);
    /* A job that a release took from its key's list before the lock above
     * is in neither place until its releaser pushes it: a reset's one pass
     * over the queues would miss it, and it would run after the next start
     * though it was queued before the reset (a dead worker's report hands
     * its key on while the pool is stopped). The push follows at once, no
     * callback in between: wait for it. Acquire: the push is visible. */
#ifndef SL_MUTANT_POOL_SWEEP_MISSES_HANDOVER /* planted bug when defined */
    while (atomic_load_explicit(&k->handing, memory_order_acquire) != 0)
        sched_yield();
#endif
    return all;
}

void sl__pool_keys_drop_list(sl__pool_key_job *list, void (*visit)(const sl_job *, void *),
                             void *ctx)
{
    while (list) {
        sl__pool_key_job *next = list->next;
        visit(&list->job, ctx);
        free(list);
        list = next;
    }
}
