/*
 * pool_sluice.c — sluice's worker pool, once per dispatch mode.
 *
 * The pool runs with its defaults but for the size and the dispatch mode:
 * an unbounded queue (as every peer here has), one priority level, no keys,
 * min_workers == max_workers so that no worker retires during a run, and
 * sl_pool_submit (the plain, lock-free-with-room path) for every job.
 */
#include <stdlib.h>

#include "contender.h"
#include "pool_peers.h"
#include "sluice/pool.h"

typedef struct spool {
    sl_pool *pool;
    slp_job_fn fn;
} spool;

static void *spool_create(unsigned workers, slp_job_fn fn, sl_dispatch mode)
{
    spool *s = malloc(sizeof(*s));
    if (!s)
        return NULL;
    sl_pool_opts o = {
        .max_workers = workers, .min_workers = workers, .dispatch = mode,
        .name = "slb-pool",
    };
    s->fn = fn;
    sl_status st = sl_pool_new(&s->pool, &o);
    if (st != SL_OK) {
        free(s);
        slb_die("sluice pool", "sl_pool_new: %s", sl_status_str(st));
    }
    return s;
}

static void *spool_create_shared(unsigned workers, slp_job_fn fn)
{
    return spool_create(workers, fn, SL_DISPATCH_SHARED);
}

static void *spool_create_rr(unsigned workers, slp_job_fn fn)
{
    return spool_create(workers, fn, SL_DISPATCH_ROUND_ROBIN);
}

static void *spool_create_ll(unsigned workers, slp_job_fn fn)
{
    return spool_create(workers, fn, SL_DISPATCH_LEAST_LOADED);
}

static void spool_submit(void *pool, void *arg)
{
    spool *s = pool;
    sl_status st = sl_pool_submit(s->pool, s->fn, arg);
    if (st != SL_OK)
        slb_die("sluice pool", "sl_pool_submit: %s", sl_status_str(st));
}

static void spool_wait_idle(void *pool, uint64_t submitted)
{
    spool *s = pool;
    (void)submitted; /* the pool counts its own jobs */
    sl_status st = sl_pool_wait_idle(s->pool, SL_FOREVER);
    if (st != SL_OK)
        slb_die("sluice pool", "sl_pool_wait_idle: %s", sl_status_str(st));
    /* The stats must agree with the driver's count: nothing queued or
     * running, and every job completed (none discarded). */
    sl_pool_stats stats;
    sl_pool_get_stats(s->pool, &stats);
    if (stats.queued || stats.running || stats.completed != submitted || stats.discarded)
        slb_die("sluice pool", "after wait_idle: queued %llu, running %u, completed %llu, "
                "discarded %llu; %llu submitted", (unsigned long long)stats.queued,
                stats.running, (unsigned long long)stats.completed,
                (unsigned long long)stats.discarded, (unsigned long long)submitted);
}

static void spool_destroy(void *pool)
{
    spool *s = pool;
    sl_pool_free(s->pool);
    free(s);
}

#define SPOOL_OPS(nm, create_fn, what)                                                    \
    {                                                                                     \
        .name = nm, .peer = "sluice", .ours = true, .note = what, .create = create_fn,    \
        .submit = spool_submit, .wait_idle = spool_wait_idle, .destroy = spool_destroy,   \
    }

const slp_ops *const *slp_pools_sluice(void)
{
    static const slp_ops shared = SPOOL_OPS("sluice shared", spool_create_shared,
                                            "SL_DISPATCH_SHARED: one queue for all workers");
    static const slp_ops rr = SPOOL_OPS("sluice round-robin", spool_create_rr,
                                        "SL_DISPATCH_ROUND_ROBIN: per-worker inboxes fed in turn");
    static const slp_ops ll = SPOOL_OPS("sluice least-loaded", spool_create_ll,
                                        "SL_DISPATCH_LEAST_LOADED: the shortest inbox is fed");
    static const slp_ops *const list[] = { &shared, &rr, &ll, NULL };
    return list;
}
