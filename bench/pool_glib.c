/*
 * pool_glib.c — GLib's GThreadPool, the pool GTK and GStreamer programs use.
 *
 * g_thread_pool_new(exclusive = TRUE, max_threads = workers) starts all its
 * threads at once and keeps them to itself, which is the configuration that
 * matches a fixed-size pool. GThreadPool has no "wait until idle" short of
 * freeing the pool, so the adapter counts finished jobs itself: the pool's
 * function is a trampoline that runs the job and then adds one to `done`
 * (one atomic add per job, on a line the workers share — what any program
 * that needs to know when its jobs are done has to add). wait_idle sleeps on
 * a condition variable until `done` reaches what the driver submitted.
 */
#include <glib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "contender.h"
#include "pool_peers.h"

typedef struct gpool {
    GThreadPool *pool;
    slp_job_fn fn;
    /* Written by every worker once per job: a line of its own. */
    _Alignas(64) _Atomic uint64_t done;
    _Alignas(64) _Atomic uint64_t wait_for; /* UINT64_MAX: nobody waits */
    pthread_mutex_t lock;
    pthread_cond_t all_done;
} gpool;

static void gpool_run(gpointer data, gpointer user)
{
    gpool *g = user;
    g->fn(data, NULL);
    /* seq_cst pairs with wait_idle's store of wait_for and load of done
     * (store-then-load on both sides): either this worker sees the waiter's
     * target, or the waiter sees this job done. acq_rel alone would allow
     * both to miss. */
    uint64_t now = atomic_fetch_add_explicit(&g->done, 1, memory_order_seq_cst) + 1;
    if (now == atomic_load_explicit(&g->wait_for, memory_order_seq_cst)) {
        pthread_mutex_lock(&g->lock);
        pthread_cond_signal(&g->all_done);
        pthread_mutex_unlock(&g->lock);
    }
}

static void *gpool_create(unsigned workers, slp_job_fn fn)
{
    gpool *g = aligned_alloc(64, sizeof(gpool));
    if (!g)
        return NULL;
    g->fn = fn;
    atomic_init(&g->done, 0);
    atomic_init(&g->wait_for, UINT64_MAX);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->all_done, NULL);
    GError *err = NULL;
    g->pool = g_thread_pool_new(gpool_run, g, (gint)workers, TRUE, &err);
    if (!g->pool) {
        fprintf(stderr, "sl-bench: g_thread_pool_new: %s\n", err ? err->message : "?");
        g_clear_error(&err);
        free(g);
        return NULL;
    }
    return g;
}

static void gpool_submit(void *pool, void *arg)
{
    gpool *g = pool;
    GError *err = NULL;
    if (!g_thread_pool_push(g->pool, arg, &err))
        slb_die("GThreadPool", "g_thread_pool_push: %s", err ? err->message : "?");
}

static void gpool_wait_idle(void *pool, uint64_t submitted)
{
    gpool *g = pool;
    /* seq_cst: see gpool_run. */
    atomic_store_explicit(&g->wait_for, submitted, memory_order_seq_cst);
    pthread_mutex_lock(&g->lock);
    while (atomic_load_explicit(&g->done, memory_order_seq_cst) < submitted)
        pthread_cond_wait(&g->all_done, &g->lock);
    pthread_mutex_unlock(&g->lock);
    atomic_store_explicit(&g->wait_for, UINT64_MAX, memory_order_relaxed);
}

static void gpool_destroy(void *pool)
{
    gpool *g = pool;
    /* Nothing is queued (after wait_idle): immediate = FALSE, wait = TRUE
     * joins the workers' exit from this pool. */
    g_thread_pool_free(g->pool, FALSE, TRUE);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->all_done);
    free(g);
}

const slp_ops *const *slp_pools_glib(void)
{
    static const slp_ops ops = {
        .name = "GLib GThreadPool", .peer = "glib",
        .note = "exclusive, max_threads = workers; completion counted by the adapter",
        .create = gpool_create, .submit = gpool_submit,
        .wait_idle = gpool_wait_idle, .destroy = gpool_destroy,
    };
    static const slp_ops *const list[] = { &ops, NULL };
    return list;
}
